import type { Database, DbName } from './types.js';

export { type Database, DB_NAMES, type DbName, type DemoCluster } from './types.js';

/**
 * Load the database module for `--db` and hand it to `use`, which must work for any connection
 * type (so connections never cross databases). Loaded on demand: a PostgreSQL run never loads
 * mysql2, and the other way round.
 */
export async function withDatabase<R>(
  name: DbName,
  use: <C>(database: Database<C>) => Promise<R>,
): Promise<R> {
  switch (name) {
    case 'pg':
      return use((await import('./pg/index.js')).pgDatabase);
    case 'mysql':
      return use((await import('./mysql/index.js')).mysqlDatabase);
    case 'mariadb':
      return use((await import('./mysql/index.js')).mariadbDatabase);
    case 'mongo-sim':
      return use((await import('./mongo-sim/index.js')).mongoSimDatabase);
  }
}
