import type { ExtractTablesWithRelations, TablesRelationalConfig } from 'drizzle-orm';
import {
  withReplicas as drizzleWithReplicas,
  type MySQLWithReplicas,
  type MySqlDatabase,
  type MySqlQueryResultHKT,
  type PreparedQueryHKTBase,
} from 'drizzle-orm/mysql-core';
import { MYSQL, type TidemarkReplicasOptions, tidemarkReplicas } from './replicas.js';

export type { TidemarkReplicasOptions } from './replicas.js';
export type { MySQLWithReplicas };

const FLAVOUR = { ...MYSQL, drizzleWithReplicas };

/**
 * Drop-in for Drizzle's `withReplicas` from `drizzle-orm/mysql-core`, for `drizzle-orm/mysql2`
 * databases (MySQL and MariaDB): same call shape and return type, with a Tidemark router in
 * place of `getReplica`.
 *
 * - `select`, `selectDistinct`, `$count`, `with(...).select*` and relational `query.*` run
 *   through `router.read` with the request's session: on a replica that has the session's writes
 *   (or after a bounded wait, or on the primary under the fallback cap), and the session is raised
 *   to what the read observed. A statement among them whose text writes or locks
 *   (`for update`, `lock in share mode`, `get_lock(...)`) runs on the primary instead.
 * - `insert`, `update`, `delete`, `execute` (raw SQL) and `with(...).update/delete` run through
 *   `router.write`: on the primary, and the write's GTID goes into the session.
 * - `transaction(fn, config)` holds one primary connection leased through `router.write` from
 *   `begin` to `commit`; every statement of `tx`, reads included, runs on it.
 * - `$primary` runs everything on the primary through `router.write`; `$replicas` are the
 *   databases you passed, untouched (they bypass Tidemark).
 *
 * ```ts
 * const db = withReplicas(primaryDb, [read1, read2], { router });
 * ```
 *
 * @throws TidemarkDrizzleError `TIDEMARK_DRIZZLE_UNSUPPORTED_DRIVER` when a database is not
 *   from `drizzle-orm/mysql2`; `ConfigError` (`TIDEMARK_CONFIG`) for bad options.
 */
export function withReplicas<
  HKT extends MySqlQueryResultHKT,
  TPreparedQueryHKT extends PreparedQueryHKTBase,
  TFullSchema extends Record<string, unknown>,
  TSchema extends TablesRelationalConfig,
  Q extends MySqlDatabase<
    HKT,
    TPreparedQueryHKT,
    TFullSchema,
    TSchema extends Record<string, unknown> ? ExtractTablesWithRelations<TFullSchema> : TSchema
  >,
>(primary: Q, replicas: [Q, ...Q[]], options: TidemarkReplicasOptions): MySQLWithReplicas<Q> {
  return tidemarkReplicas(FLAVOUR, primary, replicas, options) as MySQLWithReplicas<Q>;
}
