import type { Adapter } from './adapter.js';
import type { CatchUpWatchers } from './catch-up.js';
import type { Clock } from './clock.js';
import type { ReplicaMonitor, ReplicaState } from './monitor/types.js';
import { PassiveWatch } from './passive-watch.js';
import type { ReplicaLoad, SelectionPolicy } from './selection.js';
import type { WaitBudget } from './wait-budget.js';

/** What one bounded wait did, for counters and the router's `wait` event. */
export interface WaitReport {
  /** The replica that caught up, or the first candidate when none did. */
  readonly replica: string;
  readonly waitedMs: number;
  readonly reached: boolean;
  /**
   * True when a server-side wait ran for the read (another candidate, watched through probes, may
   * still have caught up first); false when it was watched through probes only.
   */
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
  /**
   * How long ago the primary first held `required`, in ms, as far as the router knows (0 when
   * it does not): what a learned budget conditions on. Omitted: always 0.
   */
  readonly ageOf?: (required: P) => number;
  /** The router's shared per-replica watchers (probes or server-side waits). */
  readonly watchers: CatchUpWatchers<P>;
  readonly onWait: (report: WaitReport) => void;
}

/**
 * The "wait budget left" rung of the decision ladder (decide.ts): wait for one of the replicas
 * that are behind the session to apply its position, within one budget per read. The read waits
 * on every candidate at once through the router's shared watchers (catch-up.ts), one per replica
 * however many reads wait: a server-side wait on the least lagged candidate while few reads wait
 * on it, probes otherwise and on the other candidates. The first candidate to get there serves.
 */
export class BoundedWait<P> {
  /** Outcomes of reads a learned budget gave no wait, read off later samples. */
  private readonly passive: PassiveWatch<P> | undefined;

  constructor(
    private readonly options: BoundedWaitOptions<P>,
    passive?: PassiveWatch<P>,
  ) {
    this.passive =
      passive ??
      (options.budget.explore
        ? new PassiveWatch(options.monitor, options.codec, options.clock, options.budget)
        : undefined);
  }

  /** The same wait (budget, watchers, selection) reporting to `onWait` instead. */
  withReport(onWait: (report: WaitReport) => void): BoundedWait<P> {
    return new BoundedWait({ ...this.options, onWait }, this.passive);
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
    const ageMs = this.options.ageOf?.(required) ?? 0;
    const budgetMs = this.options.budget.next(ids, ageMs);
    if (budgetMs <= 0) {
      // A learned budget of 0: waiting has not paid for these replicas lately (see AutoBudget).
      // Now and then the budget asks what a wait would have done; the read does not wait for it.
      const watchMs = this.options.budget.explore?.(ids) ?? 0;
      if (watchMs > 0 && !signal?.aborted) this.passive?.start(ids, required, watchMs, ageMs);
      return undefined;
    }
    const waitStarted = clock.now();
    const caughtUp = await this.options.watchers.wait({
      required,
      replicas: ids,
      // The least lagged, deterministically: spreading server-side waits at random among equally
      // lagged replicas hands the whole budget to a stalled one half of the time (a replica whose
      // replay stopped after the last sample looks exactly like a caught-up one).
      serverSideOn: adapter.waitFor ? ids[0] : undefined,
      deadline: started + budgetMs,
      signal,
    });
    let reached = caughtUp.replica;
    if (reached !== undefined && caughtUp.by === 'probe' && candidates.length > 1) {
      reached = this.spread(required, candidates, reached, affinityKey);
    }
    const waitedMs = clock.now() - waitStarted;
    if (!signal?.aborted) this.options.budget.record(ids, { reached, waitedMs, budgetMs, ageMs });
    this.options.onWait({
      replica: reached ?? ids[0]!,
      waitedMs,
      reached: reached !== undefined,
      serverSide: caughtUp.serverSide,
    });
    return reached;
  }

  /**
   * Several candidates probed at the same moment caught up: the selection policy spreads them,
   * as it does for reads that needed no wait.
   */
  private spread(
    required: P,
    candidates: ReadonlyArray<ReplicaState<P>>,
    reached: string,
    affinityKey: string | undefined,
  ): string {
    const { codec, monitor } = this.options;
    const covered: ReplicaState<P>[] = [];
    for (const candidate of candidates) {
      const state = monitor.state(candidate.id);
      if (
        state?.reachable &&
        state.applied !== undefined &&
        codec.compare(state.applied, required) === 'covered'
      ) {
        covered.push(state);
      }
    }
    if (covered.length < 2) return reached;
    return this.options.selection.select(covered, affinityKey, this.options.load).id;
  }
}
