import type { RouteOutcome } from '@tidemark/core';
import type { DbName } from '../databases/types.js';
import type { RunResult } from '../result.js';
import type { ReadTarget } from '../strategies/types.js';
import type { ViaName } from '../via/types.js';

/**
 * Where one read went. Strategies without a router know only the target (`replica`,
 * `primary`); reads through Tidemark's router carry its route outcome (`replica`,
 * `replica_waited`, `primary_fallback`, ..., as `@tidemark/otel` and the Prometheus exporter
 * report them). `error`: the read threw.
 */
export type ReadOutcome = ReadTarget | RouteOutcome;

/** One read as the report draws it. */
export interface ReportRead {
  /** Seconds since the run's first write. */
  readonly at: number;
  /** Latency in ms as the application saw it; undefined for a read that threw. */
  readonly ms: number | undefined;
  readonly outcome: ReadOutcome;
}

/**
 * The replica as the run's router saw it: at each `replica-state` event, and at the start of each
 * read (the latest event's state, with staleness evaluated at that moment, as the router's
 * health check does).
 */
export interface ReportReplicaState {
  /** Seconds since the run's first write (0 for the state the run started in). */
  readonly at: number;
  /** True for a `replica-state` event, false for the state evaluated at a read. */
  readonly event: boolean;
  readonly replica: string;
  /** The replica's own lag report (`state.lagSeconds`); undefined when it has none. */
  readonly lagSeconds: number | undefined;
  /**
   * How far it trails the primary (core's `stalenessSeconds`): the larger of its own lag and the
   * time since it last had everything the primary had (`behindPrimarySince`).
   */
  readonly stalenessSeconds: number | undefined;
  readonly paused: boolean;
  readonly reachable: boolean;
}

/** One (scenario, strategy) run: its result line and its samples. */
export interface ReportRun {
  readonly result: RunResult;
  readonly reads: readonly ReportRead[];
  /** Empty for strategies without a router. */
  readonly replica: readonly ReportReplicaState[];
}

export interface ReportMeta {
  readonly db: DbName;
  readonly via: ViaName | undefined;
  /** The cluster line of the demo's header. */
  readonly cluster: string;
  readonly seed: number;
  readonly customers: number;
  readonly waitBudgetMs: number | 'auto';
  /** ISO time the report was made. */
  readonly generatedAt: string;
}

export interface ReportData {
  readonly meta: ReportMeta;
  readonly runs: readonly ReportRun[];
  /** Text blocks printed under the charts (the shadow comparison, the database's caveat). */
  readonly notes: readonly string[];
}
