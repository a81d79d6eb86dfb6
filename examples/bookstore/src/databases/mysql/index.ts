import type { PoolConnection } from 'mysql2/promise';
import { REPLICA_ID } from '../../strategies/tidemark-settings.js';
import type { Database } from '../types.js';
import { connectExternalMysqlCluster, startLocalMysqlCluster } from './cluster.js';
import { MARIADB, MYSQL, type MysqlFamilyFlavour } from './flavour.js';
import { mysqlOrders } from './orders.js';
import { smallMysqlPool } from './pool.js';

function mysqlFamilyDatabase(flavour: MysqlFamilyFlavour): Database<PoolConnection> {
  const label = flavour.db === 'mysql' ? 'MySQL 9.7' : 'MariaDB 10.11';
  return {
    name: flavour.db,
    texts: {
      starting: `starting local ${label} (harness target ${flavour.target}: primary + 1 replica)...`,
      paused: "the replica's SQL/applier thread stopped",
      tidemarkAdapter: `@tidemark/mysql (flavour ${flavour.db})`,
      tidemarkWait: flavour.tidemarkWait,
    },
    orders: mysqlOrders,
    lab: flavour.lab,
    openPool: smallMysqlPool,
    startLocalCluster: () => startLocalMysqlCluster(flavour),
    connectExternalCluster: (primaryUrl, replicaUrl) =>
      connectExternalMysqlCluster(flavour, primaryUrl, replicaUrl),
    async createTidemarkStrategy(context, settings, door) {
      // Loaded on demand: the baselines run without @tidemark/mysql built.
      const [{ createMysqlAdapter }, { createTidemarkStrategy }] = await Promise.all([
        import('@tidemark/mysql'),
        import('../../strategies/tidemark.js'),
      ]);
      const nodes = {
        primary: context.primaryUrl,
        replicas: { [REPLICA_ID]: context.replicaUrl },
        poolSize: 2,
      };
      // One call per flavour: each returns the adapter of its own position type.
      return flavour.db === 'mysql'
        ? createTidemarkStrategy(
            createMysqlAdapter({ ...nodes, flavour: 'mysql' }),
            context,
            settings,
            door,
          )
        : createTidemarkStrategy(
            createMysqlAdapter({ ...nodes, flavour: 'mariadb' }),
            context,
            settings,
            door,
          );
    },
  };
}

/** MySQL 9.7: the harness's local `mysql97` target, or your own primary and replica. */
export const mysqlDatabase = mysqlFamilyDatabase(MYSQL);

/** MariaDB 10.11: the harness's local `mariadb1011` target, or your own primary and replica. */
export const mariadbDatabase = mysqlFamilyDatabase(MARIADB);
