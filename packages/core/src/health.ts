import type { ReplicaState } from './monitor/types.js';

export interface HealthOptions {
  /** A sample older than this makes the replica unhealthy. Default 1000 ms. */
  maxSampleAgeMs: number;
  /**
   * Staleness over this makes the replica unhealthy for reads. Default 10 s. Staleness is the
   * larger of the replica's own lag report and the time since it last had everything the primary
   * had (measured against the primary's samples).
   */
  maxLagSeconds: number;
}

/**
 * Healthy only while: the last probe answered, the sample is younger than maxSampleAge, the
 * replica is on the current primary's history, and its staleness against the primary is under
 * maxLag (invariant 9). Unknown own lag counts as healthy: not every database reports it, and the
 * primary-side measure covers it. Correctness never rests on lag: tokens do that.
 */
export function isHealthy<P>(state: ReplicaState<P>, now: number, options: HealthOptions): boolean {
  return (
    state.reachable &&
    state.applied !== undefined &&
    now - state.sampledAt <= options.maxSampleAgeMs &&
    (state.lagSeconds === undefined || state.lagSeconds <= options.maxLagSeconds) &&
    onPrimaryHistoryAndFresh(state, now, options)
  );
}

function onPrimaryHistoryAndFresh<P>(
  state: ReplicaState<P>,
  now: number,
  options: HealthOptions,
): boolean {
  if (state.history !== 'current' && state.history !== 'unchecked') return false;
  return (
    state.behindPrimarySince === undefined ||
    now - state.behindPrimarySince <= options.maxLagSeconds * 1000
  );
}

/**
 * Seconds the replica trails the primary as far as the monitor can tell: the larger of its own
 * report and the primary-side measure; undefined when neither is known.
 */
export function stalenessSeconds<P>(state: ReplicaState<P>, now: number): number | undefined {
  if (state.history === 'unchecked') return state.lagSeconds;
  const fromPrimary =
    state.behindPrimarySince === undefined
      ? 0
      : Math.max(0, (now - state.behindPrimarySince) / 1000);
  return state.lagSeconds === undefined ? fromPrimary : Math.max(fromPrimary, state.lagSeconds);
}
