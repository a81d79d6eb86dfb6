import type { DatabaseTexts } from '../databases/types.js';

/** How the demo configures Tidemark; printed in the header so results can be reproduced. */
export interface TidemarkSettings {
  /** Bounded wait per read, ms, or `auto` (learned from observed catch-up times, 250 ms ceiling). */
  readonly waitBudgetMs: number | 'auto';
  /** The ceiling of an `auto` budget (`wait.maxBudgetMs`); undefined: the router's 250 ms. */
  readonly waitMaxBudgetMs?: number;
  /** Primary fallbacks refilled per second. */
  readonly fallbackRatePerSecond: number;
  /** Fallback bucket size; undefined: the run's planned reads (the cap never bites). */
  readonly fallbackBurst: number | undefined;
  /**
   * `route` (the tidemark strategy) or `shadow` (the shadow strategy: the same router in
   * shadow mode, every read on the primary, predictions per read). Default `route`.
   */
  readonly mode?: 'route' | 'shadow';
}

/** Name of the cluster inside tokens. */
export const CLUSTER = 'bookstore';
export const REPLICA_ID = 'replica1';

/**
 * The header line for tidemark. `plannedReads` lists the reads of each scenario that will run,
 * e.g. `idle 5000, paused 1500`, which is the default fallback burst of that run.
 */
export function tidemarkDescription(
  settings: TidemarkSettings,
  plannedReads: string,
  texts: Pick<DatabaseTexts, 'tidemarkAdapter' | 'tidemarkWait'>,
): string {
  const burst =
    settings.fallbackBurst === undefined
      ? `burst = every read of the run (${plannedReads}), so with replay paused the primary can serve all of them`
      : `burst ${settings.fallbackBurst}`;
  return `core Router + ${texts.tidemarkAdapter}: one token per customer (carried like a cookie), bounded wait ${settings.waitBudgetMs} ms (${texts.tidemarkWait}), primary fallback cap: token bucket, ${burst}, refill ${settings.fallbackRatePerSecond}/s; above the cap: error (counted in errors); monotonic reads`;
}

/** The header line for shadow. */
export function shadowDescription(settings: TidemarkSettings): string {
  return `tidemark's router in shadow mode: every read on the primary (today's app), and per read a prediction of where tidemark would send it (bounded wait ${settings.waitBudgetMs} ms) and whether naive would have missed the reader's own orders; predicted_* fields, next to what naive and tidemark measured`;
}
