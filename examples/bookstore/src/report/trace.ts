import type { Router } from '@tidemark/core';
import type { ReadTarget } from '../strategies/types.js';

/**
 * What the workload tells an observer about each read, for the HTML report. The workload calls
 * these in order, one read at a time; without an observer it records nothing extra.
 */
export interface WorkloadTrace {
  /** The run's first write is about to start (`performance.now()` time zero of the run). */
  begin(): void;
  /** One read ended. `startedAt` is `performance.now()` when it started. */
  read(read: TracedRead): void;
}

export type TracedRead =
  | {
      readonly startedAt: number;
      /** Latency as the application saw it: routing, any wait, the query. */
      readonly ms: number;
      readonly target: ReadTarget;
      readonly error?: undefined;
    }
  | { readonly startedAt: number; readonly error: true };

/**
 * Called with the strategy's router (tidemark, shadow, and their `--via` front doors) right after
 * it was created, so the report can listen to its `decision` and `replica-state` events.
 */
export type ObserveRouter = <P, C>(router: Router<P, C>) => void;
