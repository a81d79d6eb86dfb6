import type { ReplicaState } from './monitor/types.js';

export interface HealthOptions {
  /** A sample older than this makes the replica unhealthy. Default 1000 ms. */
  maxSampleAgeMs: number;
  /** Lag over this makes the replica unhealthy for reads. Default 10 s. */
  maxLagSeconds: number;
}

/**
 * DESIGN.md: healthy only while the last probe answered, the sample is younger than
 * maxSampleAge, and lag is under maxLag. Unknown lag counts as healthy: not every database
 * reports it, and correctness never rests on lag (tokens do that).
 */
export function isHealthy<P>(state: ReplicaState<P>, now: number, options: HealthOptions): boolean {
  return (
    state.reachable &&
    state.applied !== undefined &&
    now - state.sampledAt <= options.maxSampleAgeMs &&
    (state.lagSeconds === undefined || state.lagSeconds <= options.maxLagSeconds)
  );
}
