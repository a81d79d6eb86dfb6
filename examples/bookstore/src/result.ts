import type { DbName } from './databases/types.js';
import type { ScenarioName, StrategyName } from './options.js';
import type { ViaName } from './via/types.js';

/**
 * One (scenario, strategy) run: the demo's output record. Field names are the output format
 * (`key=value` lines and `--json` objects), so they stay snake_case and never change meaning.
 */
export interface RunResult {
  readonly scenario: ScenarioName;
  readonly strategy: StrategyName;
  /** Orders attempted. */
  readonly orders: number;
  /** Reads attempted (writer plus other readers, per order). */
  readonly reads: number;
  /** Reads whose list lacked one of the reader's own acknowledged orders from their latest 20. */
  readonly missing_in_list: number;
  readonly replica_reads: number;
  readonly primary_reads: number;
  /** Writes and reads that threw (details on stderr). */
  readonly errors: number;
  /** Reads that waited for the replica to catch up. */
  readonly waits: number;
  /** Median wait of the reads that waited; null when none did. */
  readonly wait_ms_p50: number | null;
  /** Read latency as the application sees it: routing, any wait, and the query. */
  readonly read_ms_p50: number | null;
  readonly read_ms_p99: number | null;
  /** Reads by a customer who had at least one acknowledged order: the reads that could miss. */
  readonly checked_reads: number;
  /** Missing lists among the writer's own read right after each write. */
  readonly missing_after_write: number;
  readonly duration_s: number;
  /**
   * The database the run used: `pg`, `mysql`, `mariadb`, or `mongo-sim` (MongoDB on the replica-set
   * simulator). Last, so earlier columns keep their place.
   */
  readonly db: DbName;
  /** `--via` runs only: the ORM or query builder the queries went through (after `db`). */
  readonly via?: ViaName;
  /** The shadow strategy's predictions for its own reads (after `db`); absent for the others. */
  readonly shadow?: ShadowCounts;
}

/**
 * What shadow mode predicted for the reads of its run, to compare with what the naive and
 * tidemark runs of the same scenario (same seed, same writers and readers) measured.
 */
export interface ShadowCounts {
  /** Reads tidemark would have served from the replica (with or without a wait). */
  readonly predicted_replica_reads: number;
  /** Reads tidemark would have sent to the primary (the fallback cap is not predicted). */
  readonly predicted_primary_reads: number;
  /** Reads tidemark would have failed (a policy error). */
  readonly predicted_errors: number;
  /** Reads that would have waited for the replica; compare with tidemark's `waits`. */
  readonly predicted_waits: number;
  readonly predicted_wait_ms_p50: number | null;
  /** Checked reads naive would have served without the reader's own orders (`missing_in_list`). */
  readonly predicted_naive_missing: number;
  /** Of those, the writer's own read right after each write (`missing_after_write`). */
  readonly predicted_naive_missing_after_write: number;
}

/** The documented fields, in output order. */
export const RESULT_FIELDS = [
  'scenario',
  'strategy',
  'orders',
  'reads',
  'missing_in_list',
  'replica_reads',
  'primary_reads',
  'errors',
  'waits',
  'wait_ms_p50',
  'read_ms_p50',
  'read_ms_p99',
  'checked_reads',
  'missing_after_write',
  'duration_s',
  'db',
] as const satisfies ReadonlyArray<keyof RunResult>;

/** The shadow strategy's extra fields, in output order, after {@link RESULT_FIELDS}. */
export const SHADOW_FIELDS = [
  'predicted_replica_reads',
  'predicted_primary_reads',
  'predicted_errors',
  'predicted_waits',
  'predicted_wait_ms_p50',
  'predicted_naive_missing',
  'predicted_naive_missing_after_write',
] as const satisfies ReadonlyArray<keyof ShadowCounts>;
