import type { DecisionReason, RouteOutcome } from './decision.js';
import { routeOutcome } from './decision.js';
import type { ReplicaMonitor } from './monitor/types.js';
import type { PositionCodec } from './position.js';

/** Outcomes a prediction can have: every route outcome but `shadow` itself. */
export type PredictedOutcome = Exclude<RouteOutcome, 'shadow'>;

/**
 * What shadow mode (`mode: 'shadow'`) predicts for one read that it sent to the primary. The
 * prediction runs the same decision ladder as routing does, against the monitor's state at the
 * read's start and the probes a real wait would have sent, without touching the session, the
 * fallback cap or any replica connection.
 */
export interface ShadowPrediction {
  readonly cluster: string;
  /**
   * Where Tidemark would have sent the read, as in a routed read's decision; `error` when it
   * would have thrown (a token from another history under `otherHistory: 'error'`, a bad token
   * under `badToken: 'reject'`, a history check that could not answer).
   */
  readonly reason: DecisionReason | 'error';
  readonly outcome: PredictedOutcome;
  /** Whether Tidemark would have waited for a replica (whether or not one caught up in time). */
  readonly waited: boolean;
  /** How long that wait would have lasted in ms (the router's `wait` event); 0 without one. */
  readonly waitedMs: number;
  /**
   * Would a naive router (a uniformly random replica, tokens ignored) have served this read
   * without the session's own writes? Undefined when the session had no position (nothing of its
   * own to miss) or the replica it drew was unreachable.
   */
  readonly naiveStale: boolean | undefined;
  /** The replica the naive router drew; undefined when there are none. */
  readonly naiveReplica: string | undefined;
}

/** Totals of shadow predictions since the router started; see {@link ShadowLedger.snapshot}. */
export interface ShadowReport {
  /** Reads predicted (all of them went to the primary). */
  readonly reads: number;
  /** Predicted reads by outcome: what the routed mode would have done. */
  readonly byOutcome: Readonly<Record<PredictedOutcome, number>>;
  readonly byReason: Readonly<Partial<Record<DecisionReason | 'error', number>>>;
  /** Predicted reads that would have waited for a replica (reached it or not). */
  readonly waits: number;
  /** Median and 99th percentile of predicted waits in ms; null with no waits. */
  readonly waitMsP50: number | null;
  readonly waitMsP99: number | null;
  /** Reads whose session had a position: the ones a naive router could serve stale. */
  readonly naiveChecked: number;
  /** Of those, reads a naive router would have served without the session's own writes. */
  readonly naiveStale: number;
  /** Predictions still running (their reads already returned). */
  readonly pending: number;
}

const OUTCOMES: readonly PredictedOutcome[] = [
  'replica',
  'replica_waited',
  'primary_fallback',
  'degraded_stale',
  'error',
];

/** Wait samples kept for the percentiles: the most recent ones, bounded. */
const WAIT_SAMPLES = 10_000;

/**
 * Shadow mode's bookkeeping: counts predictions as they finish and lets a caller await the ones
 * still running (a report at the end of a run must include every read of it).
 */
export class ShadowLedger {
  private reads = 0;
  private waits = 0;
  private naiveChecked = 0;
  private naiveStale = 0;
  private readonly byOutcome = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<
    PredictedOutcome,
    number
  >;
  private readonly byReason: Partial<Record<DecisionReason | 'error', number>> = {};
  private readonly waitSamples: number[] = [];
  private readonly running = new Set<Promise<unknown>>();

  /** Track a prediction in flight; it is counted when it settles. */
  track(prediction: Promise<ShadowPrediction>): void {
    const done = prediction.then((p) => this.record(p));
    this.running.add(done);
    void done.finally(() => this.running.delete(done));
  }

  /** Resolves once every prediction started so far has been counted. */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  snapshot(): ShadowReport {
    const sorted = [...this.waitSamples].sort((a, b) => a - b);
    return {
      reads: this.reads,
      byOutcome: { ...this.byOutcome },
      byReason: { ...this.byReason },
      waits: this.waits,
      waitMsP50: percentile(sorted, 50),
      waitMsP99: percentile(sorted, 99),
      naiveChecked: this.naiveChecked,
      naiveStale: this.naiveStale,
      pending: this.running.size,
    };
  }

  private record(prediction: ShadowPrediction): void {
    this.reads++;
    this.byOutcome[prediction.outcome]++;
    this.byReason[prediction.reason] = (this.byReason[prediction.reason] ?? 0) + 1;
    if (prediction.waited) {
      this.waits++;
      if (this.waitSamples.length === WAIT_SAMPLES) this.waitSamples.shift();
      this.waitSamples.push(prediction.waitedMs);
    }
    if (prediction.naiveStale !== undefined) {
      this.naiveChecked++;
      if (prediction.naiveStale) this.naiveStale++;
    }
  }
}

/** The outcome of a predicted reason; `error` stays `error`. */
export function predictedOutcome(reason: DecisionReason | 'error'): PredictedOutcome {
  const outcome = reason === 'error' ? 'error' : routeOutcome(reason);
  // A prediction runs the routing ladder, which never answers `shadow`.
  return outcome === 'shadow' ? 'primary_fallback' : outcome;
}

/**
 * The position of `replica` from a probe sent no earlier than now: what a read sent now would
 * find there (a sample taken before the session's write says nothing about whether the replica
 * applied it since). Undefined when the replica does not answer.
 */
export function probeFromNow<P>(
  monitor: ReplicaMonitor<P>,
  replica: string,
): Promise<P | undefined> {
  return monitor.appliedAfter(replica, monitor.ticket()).catch(() => undefined);
}

/**
 * Would a read sent to `replica` when `probe` was sent lack `required`? The monitor's sample
 * answers when it already covers the position (no probe needed: `probe` may be undefined, and
 * one is sent only if the sample does not cover); otherwise the probe does. Undefined when the
 * replica cannot be asked.
 */
export async function naiveWouldMiss<P>(
  monitor: ReplicaMonitor<P>,
  codec: PositionCodec<P>,
  replica: string,
  required: P,
  probe: Promise<P | undefined> | undefined,
): Promise<boolean | undefined> {
  const sampled = monitor.state(replica)?.applied;
  if (sampled !== undefined && codec.compare(sampled, required) === 'covered') return false;
  const applied = await (probe ?? probeFromNow(monitor, replica));
  return applied === undefined ? undefined : codec.compare(applied, required) !== 'covered';
}

function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round((sorted[Math.max(0, index)] as number) * 100) / 100;
}
