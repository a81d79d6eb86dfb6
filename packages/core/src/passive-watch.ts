import type { Clock } from './clock.js';
import type { ReplicaMonitor, ReplicaState } from './monitor/types.js';
import type { PositionCodec } from './position.js';
import type { WaitBudget } from './wait-budget.js';

interface OpenWatch<P> {
  readonly replicas: readonly string[];
  readonly required: P;
  readonly startedAt: number;
  readonly deadline: number;
  readonly budgetMs: number;
  readonly ageMs: number;
}

/**
 * What a read that did not wait would have seen had it waited, learned from samples the monitor
 * takes anyway: no probe is sent and the read goes on at once. A learned budget that gave a
 * replica no wait needs to notice when waiting would pay again (the replica recovered); making a
 * read wait the ceiling for that put those reads in the tail of every latency distribution (one
 * read in 100 waited 250 ms in vain while replay was 500 ms behind). Here the outcome is read off
 * the monitor's later samples of the candidates: the first sample at or before the deadline that
 * shows one of them applied the position records a catch-up (at the sample's time, so never
 * shorter than the truth), and none by the deadline records a wait that ran out, exactly as a
 * real wait of the same budget would have been recorded.
 */
export class PassiveWatch<P> {
  private readonly open: OpenWatch<P>[] = [];

  constructor(
    monitor: ReplicaMonitor<P>,
    private readonly codec: PositionCodec<P>,
    private readonly clock: Clock,
    private readonly budget: WaitBudget,
  ) {
    monitor.events.on('state', (state) => this.onSample(state));
  }

  /** Watches open now (for tests and diagnostics). */
  get size(): number {
    return this.open.length;
  }

  /**
   * Watch `replicas` for `required` for `budgetMs` from now, without anyone waiting. At most one
   * watch per replica is open at a time: one is enough to notice a recovery, and every sample
   * (a read's own observation included) is checked against the open ones, which must stay cheap
   * at tens of thousands of reads per second.
   */
  start(replicas: readonly string[], required: P, budgetMs: number, ageMs: number): void {
    this.expire(this.clock.now());
    if (budgetMs <= 0) return;
    if (this.open.some((watch) => watch.replicas.some((id) => replicas.includes(id)))) return;
    const startedAt = this.clock.now();
    this.open.push({
      replicas,
      required,
      startedAt,
      deadline: startedAt + budgetMs,
      budgetMs,
      ageMs,
    });
  }

  private onSample(state: ReplicaState<P>): void {
    if (this.open.length === 0) return;
    this.expire(state.sampledAt);
    for (let i = this.open.length - 1; i >= 0; i--) {
      const watch = this.open[i]!;
      if (!watch.replicas.includes(state.id)) continue;
      // A sample from before the watch began says nothing about how long the catch-up took.
      if (state.sampledAt < watch.startedAt || state.applied === undefined) continue;
      if (this.codec.compare(state.applied, watch.required) !== 'covered') continue;
      this.open.splice(i, 1);
      this.budget.record(watch.replicas, {
        reached: state.id,
        waitedMs: state.sampledAt - watch.startedAt,
        budgetMs: watch.budgetMs,
        ageMs: watch.ageMs,
      });
    }
  }

  /** Watches whose deadline passed before `now` ran out: recorded as waits that ran out. */
  private expire(now: number): void {
    for (let i = this.open.length - 1; i >= 0; i--) {
      const watch = this.open[i]!;
      if (watch.deadline >= now) continue;
      this.open.splice(i, 1);
      this.budget.record(watch.replicas, {
        reached: undefined,
        waitedMs: watch.budgetMs,
        budgetMs: watch.budgetMs,
        ageMs: watch.ageMs,
      });
    }
  }
}
