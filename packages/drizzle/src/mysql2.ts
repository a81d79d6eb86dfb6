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
 * Drizzle's `withReplicas` (from `drizzle-orm/mysql-core`) for `drizzle-orm/mysql2` databases,
 * MySQL and MariaDB, with a Tidemark router in place of `getReplica`. As the node-postgres one:
 * reads on replicas that have the session's GTIDs, the rest on the primary with capture. No
 * `selectDistinctOn` (MySQL has none); mysql2 `.iterator()` works inside `transaction()` only.
 *
 * @throws TidemarkDrizzleError `TIDEMARK_DRIZZLE_UNSUPPORTED_DRIVER` when a database is not from
 *   `drizzle-orm/mysql2`; `ConfigError` (`TIDEMARK_CONFIG`) for bad options.
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
