import type { ShadowPrediction } from '@tidemark/core';
import type { StrategyName } from '../options.js';
import type { ObserveRouter } from '../report/trace.js';

/** Where a read was served. */
export type ReadTarget = 'primary' | 'replica';

export interface StrategyRead<T> {
  readonly value: T;
  readonly target: ReadTarget;
  /** Milliseconds this read spent waiting for the replica to catch up; undefined: no wait. */
  readonly waitedMs: number | undefined;
  /** Shadow strategy only: where Tidemark would have sent this read (resolves in the background). */
  readonly prediction?: Promise<ShadowPrediction> | undefined;
}

/**
 * One way of routing the bookstore's queries; `C` is the database driver's connection type.
 * Every customer has their own session state inside the strategy (a last-write time, a
 * last-write position, a token), created on first use. Calls for one customer are made one at
 * a time (a customer's session state is read before and stored after each call); tidemark's
 * strategy also lets calls for different customers overlap (the fixed-rate benchmark,
 * `pnpm bench:budget --rate`).
 */
export interface Strategy<C> {
  readonly name: StrategyName;
  /** Run a write for `customer` on the primary; the callback gets a connection to use. */
  write<T>(customer: number, fn: (connection: C) => Promise<T>): Promise<T>;
  /** Run a read for `customer` wherever the strategy routes it. */
  read<T>(customer: number, fn: (connection: C) => Promise<T>): Promise<StrategyRead<T>>;
  /** Release pools and timers. */
  close(): Promise<void>;
}

/** What every strategy is built from. */
export interface StrategyContext {
  readonly primaryUrl: string;
  readonly replicaUrl: string;
  /** Reads the run will make; tidemark sizes its default fallback cap with it. */
  readonly plannedReads: number;
  /** The HTML report listens to the router of tidemark and shadow (and their `--via` doors). */
  readonly observeRouter?: ObserveRouter | undefined;
}
