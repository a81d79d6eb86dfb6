import type pg from 'pg';
import { REPLICA_ID } from '../../strategies/tidemark-settings.js';
import type { Database } from '../types.js';
import { connectExternalCluster, startEmbeddedCluster } from './cluster.js';
import { pgLab } from './lab.js';
import { pgOrders } from './orders.js';
import { smallPgPool } from './pool.js';

/** PostgreSQL: embedded PostgreSQL 18 by default, or your own primary and streaming replica. */
export const pgDatabase: Database<pg.PoolClient> = {
  name: 'pg',
  texts: {
    starting: 'starting embedded PostgreSQL (primary + 1 replica)...',
    paused: 'replay paused on the replica',
    tidemarkAdapter: '@tidemark/pg',
    tidemarkWait: 'WAIT FOR LSN on PostgreSQL 19+, else the router probes the replica every 10 ms',
  },
  orders: pgOrders,
  lab: pgLab,
  openPool: smallPgPool,
  startLocalCluster: startEmbeddedCluster,
  connectExternalCluster,
  async createTidemarkStrategy(context, settings, door) {
    // Loaded on demand: the baselines run without @tidemark/pg built.
    const [{ createPgAdapter }, { createTidemarkStrategy }] = await Promise.all([
      import('@tidemark/pg'),
      import('../../strategies/tidemark.js'),
    ]);
    const adapter = createPgAdapter({
      primary: context.primaryUrl,
      replicas: { [REPLICA_ID]: context.replicaUrl },
      poolSize: 2,
    });
    return createTidemarkStrategy(adapter, context, settings, door);
  },
};
