import type { ExtractTablesWithRelations, TablesRelationalConfig } from 'drizzle-orm';
import {
  withReplicas as drizzleWithReplicas,
  type PgDatabase,
  type PgQueryResultHKT,
  type PgWithReplicas,
} from 'drizzle-orm/pg-core';
import { PG, type TidemarkReplicasOptions, tidemarkReplicas } from './replicas.js';

export type { TidemarkReplicasOptions } from './replicas.js';
export type { PgWithReplicas };

const FLAVOUR = { ...PG, drizzleWithReplicas };

/**
 * Drop-in for Drizzle's `withReplicas` from `drizzle-orm/pg-core`, for `drizzle-orm/node-postgres`
 * databases: same call shape and return type, with a Tidemark router in place of `getReplica`.
 *
 * - `select`, `selectDistinct`, `selectDistinctOn`, `$count`, `with(...).select*` and relational
 *   `query.*` run through `router.read` with the request's session: on a replica that has the
 *   session's writes (or after a bounded wait, or on the primary under the fallback cap), and the
 *   session is raised to what the read observed (monotonic reads). A statement among them whose
 *   text writes or locks (a write CTE, `for update`, `nextval(...)`) runs on the primary instead.
 * - `insert`, `update`, `delete`, `execute` (raw SQL), `refreshMaterializedView` and
 *   `with(...).insert/update/delete` run through `router.write`: on the primary, and the write's
 *   position goes into the session.
 * - `transaction(fn, config)` holds one primary connection leased through `router.write` from
 *   `begin` to `commit`; every statement of `tx`, reads included, runs on it; the commit's
 *   position goes into the session before the promise resolves.
 * - `$primary` is a database whose every statement runs on the primary through `router.write`;
 *   `$replicas` are the databases you passed, untouched (direct, no session: they bypass
 *   Tidemark).
 *
 * ```ts
 * const db = withReplicas(primaryDb, [read1, read2], { router });
 * ```
 *
 * @throws TidemarkDrizzleError `TIDEMARK_DRIZZLE_UNSUPPORTED_DRIVER` when a database is not
 *   from `drizzle-orm/node-postgres`; `ConfigError` (`TIDEMARK_CONFIG`) for bad options.
 */
export function withReplicas<
  HKT extends PgQueryResultHKT,
  TFullSchema extends Record<string, unknown>,
  TSchema extends TablesRelationalConfig,
  Q extends PgDatabase<
    HKT,
    TFullSchema,
    TSchema extends Record<string, unknown> ? ExtractTablesWithRelations<TFullSchema> : TSchema
  >,
>(primary: Q, replicas: [Q, ...Q[]], options: TidemarkReplicasOptions): PgWithReplicas<Q> {
  return tidemarkReplicas(FLAVOUR, primary, replicas, options) as PgWithReplicas<Q>;
}
