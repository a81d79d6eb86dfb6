import type { Adapter } from './adapter.js';
import type { Clock } from './clock.js';
import type { ReplicaMonitor, ReplicaState } from './monitor/types.js';
import type { ReplicaLoad, SelectionPolicy } from './selection.js';
import type { WaitBudget } from './wait-budget.js';

/** What one bounded wait did, for counters and the router's `wait` event. */
export interface WaitReport {
  /** The replica that caught up, or the first candidate when none did. */
  readonly replica: string;
  readonly waitedMs: number;
  readonly reached: boolean;
  /** True when the adapter waited on the server (not polling probes). */
  readonly serverSide: boolean;
}

export interface BoundedWaitOptions<P> {
  /**
   * Read at call time, not copied: an adapter may learn only from its probes that its servers
   * can wait (PostgreSQL 19's WAIT FOR LSN).
   */
  readonly adapter: Pick<Adapter<P, unknown>, 'waitFor'>;
  readonly codec: Adapter<P, unknown>['codec'];
  readonly monitor: ReplicaMonitor<P>;
  readonly clock: Clock;
  readonly selection: SelectionPolicy;
  readonly load: ReplicaLoad;
  /** Total time one read may wait: a constant, or learned (`AutoBudget`). */
  readonly budget: WaitBudget;
  /** Pause between probe rounds when polling. */
  readonly pollIntervalMs: number;
  readonly onWait: (report: WaitReport) => void;
}

/**
 * The "wait budget left" rung of the decision ladder (decide.ts): wait for one of the replicas
 * that are behind the session to apply its position, within one budget per read, server-side
 * when the adapter can, else by polling the monitor's (shared) probes.
 */
export class BoundedWait<P> {
  constructor(private readonly options: BoundedWaitOptions<P>) {}

  /** The same wait (budget, probes, selection) reporting to `onWait` instead. */
  withReport(onWait: (report: WaitReport) => void): BoundedWait<P> {
    return new BoundedWait({ ...this.options, onWait });
  }

  get enabled(): boolean {
    return this.options.budget.enabled;
  }

  /**
   * The replica that applied `required` before `started + budget`, or undefined. `candidates`
   * come best first (least lagged).
   */
  async until(
    required: P,
    candidates: ReadonlyArray<ReplicaState<P>>,
    started: number,
    signal: AbortSignal | undefined,
    affinityKey: string | undefined,
  ): Promise<string | undefined> {
    const { clock, adapter } = this.options;
    const ids = candidates.map((c) => c.id);
    const budgetMs = this.options.budget.next(ids);
    // A learned budget of 0: waiting has not paid for these replicas lately (see AutoBudget).
    if (budgetMs <= 0) return undefined;
    const deadline = started + budgetMs;
    const waitStarted = clock.now();
    let serverSide = false;
    let reached: string | undefined;
    if (adapter.waitFor) {
      // The least lagged, deterministically: spreading server-side waits at random among equally
      // lagged replicas hands the whole budget to a stalled one half of the time (a replica whose
      // replay stopped after the last sample looks exactly like a caught-up one).
      const best = candidates[0]!;
      const result = await this.serverSide(best.id, required, deadline, signal);
      serverSide = result !== 'unsupported';
      if (result === 'reached') reached = best.id;
    }
    reached ??= await this.poll(required, candidates, deadline, signal, affinityKey);
    const waitedMs = clock.now() - waitStarted;
    if (!signal?.aborted) this.options.budget.record(ids, { reached, waitedMs, budgetMs });
    this.options.onWait({
      replica: reached ?? candidates[0]!.id,
      waitedMs,
      reached: reached !== undefined,
      serverSide,
    });
    return reached;
  }

  private async serverSide(
    id: string,
    required: P,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<'reached' | 'not-reached' | 'unsupported'> {
    const { clock, adapter, monitor } = this.options;
    const remaining = deadline - clock.now();
    if (remaining <= 0 || !adapter.waitFor) return 'not-reached';
    const controller = new AbortController();
    if (signal?.aborted) controller.abort();
    const abortLinked = () => controller.abort();
    signal?.addEventListener('abort', abortLinked, { once: true });
    try {
      const result = await adapter.waitFor(id, required, remaining, {
        signal: controller.signal,
      });
      if (result.outcome === 'reached') {
        monitor.observe(id, result.applied ?? required);
        return 'reached';
      }
      return result.outcome === 'unsupported' ? 'unsupported' : 'not-reached';
    } catch (error) {
      monitor.reportFailure(id, error);
      return 'not-reached';
    } finally {
      // A long-lived caller signal must not collect one listener per waited read.
      signal?.removeEventListener('abort', abortLinked);
    }
  }

  /** Probe the candidates until one covers the position or the budget runs out. */
  private async poll(
    required: P,
    candidates: ReadonlyArray<ReplicaState<P>>,
    deadline: number,
    signal: AbortSignal | undefined,
    affinityKey: string | undefined,
  ): Promise<string | undefined> {
    const { clock, codec, monitor } = this.options;
    const ids = candidates.map((c) => c.id);
    while (clock.now() < deadline && !signal?.aborted) {
      // A slow probe must not stretch the budget: stop listening at the deadline.
      const bound = new AbortController();
      await Promise.race([
        Promise.all(ids.map((id) => monitor.refresh(id))),
        clock.sleep(deadline - clock.now(), bound.signal),
      ]);
      bound.abort();
      let covered: ReplicaState<P>[] | undefined;
      for (const id of ids) {
        const state = monitor.state(id);
        if (
          state?.reachable &&
          state.applied !== undefined &&
          codec.compare(state.applied, required) === 'covered'
        ) {
          covered ??= [];
          covered.push(state);
        }
      }
      if (covered) {
        // Several caught up in the same round: the selection policy spreads them, as it does
        // for reads that needed no wait.
        return covered.length === 1
          ? covered[0]!.id
          : this.options.selection.select(covered, affinityKey, this.options.load).id;
      }
      const remaining = deadline - clock.now();
      if (remaining <= 0) break;
      await clock.sleep(Math.min(this.options.pollIntervalMs, remaining), signal);
    }
    return undefined;
  }
}
