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
 * Drizzle's `withReplicas` (from `drizzle-orm/pg-core`) for `drizzle-orm/node-postgres`
 * databases, with a Tidemark router in place of `getReplica`: same call shape, same return type.
 * `select`, `selectDistinct`, `selectDistinctOn`, `$count`, `with(...).select` and `query.*` run
 * on a replica that has the session's writes (`router.read`; a write CTE or a locking select goes
 * to the primary instead); everything else, `$primary` and `transaction()` (reads inside
 * included) run on the primary through `router.write`, which puts their positions into the
 * session. `$replicas` are the databases you passed, untouched. The README's "Where each query
 * goes" has the full table.
 *
 * ```ts
 * const db = withReplicas(primaryDb, [read1, read2], { router });
 * ```
 *
 * @throws TidemarkDrizzleError `TIDEMARK_DRIZZLE_UNSUPPORTED_DRIVER` when a database is not from
 *   `drizzle-orm/node-postgres`; `ConfigError` (`TIDEMARK_CONFIG`) for bad options.
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
