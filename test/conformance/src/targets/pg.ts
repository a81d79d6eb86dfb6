import { createPgAdapter, type PgPosition } from '@tidemark/pg';
import { type Cluster, startCluster } from '@tidemark/test-clusters';
import type { PoolClient } from 'pg';
import type { AdapterNeeds, ConformanceTarget, ContractOps, Workload } from '../types.js';

/** The cluster targets the PostgreSQL adapter is proven against; they share this module. */
export type PgClusterTarget = 'pg15' | 'pg18' | 'pg19';

const SETUP_SQL = `
CREATE TABLE IF NOT EXISTS orders (
  id bigint PRIMARY KEY,
  customer bigint NOT NULL,
  note text NOT NULL
);
CREATE INDEX IF NOT EXISTS orders_by_customer ON orders (customer, id DESC);
`;

/** Ids of read-only probes never collide with real orders (those are positive). */
let probeId = -Date.now() * 100;

export const pgWorkload: Workload<PoolClient> = {
  async setup(cluster: Cluster) {
    await cluster.exec(cluster.primary().name, SETUP_SQL);
  },
  async insertOrder(client, order) {
    await client.query('INSERT INTO orders (id, customer, note) VALUES ($1, $2, $3)', [
      order.id,
      order.customer,
      order.note,
    ]);
  },
  async ordersOf(client, customer) {
    const result = await client.query<{ id: string }>(
      'SELECT id FROM orders WHERE customer = $1 ORDER BY id DESC LIMIT 20',
      [customer],
    );
    // bigint arrives as text from node-postgres; the suite's ids stay below 2^53.
    return result.rows.map((row) => Number(row.id));
  },
  async tryWrite(client) {
    probeId -= 1;
    await client.query('INSERT INTO orders (id, customer, note) VALUES ($1, -1, $2)', [
      probeId,
      'must fail when read-only',
    ]);
  },
};

export const pgContract: ContractOps<PoolClient> = {
  async slowRead(client, seconds) {
    await client.query('SELECT pg_sleep($1)', [seconds]);
  },
  async badQuery(client) {
    await client.query('SELEC 1');
  },
  // SQLSTATE 25006 read_only_sql_transaction.
  isReadOnlyRefusal: (error) => (error as { code?: unknown } | undefined)?.code === '25006',
  async insertInOpenTransaction(client, order) {
    await client.query('BEGIN');
    await pgWorkload.insertOrder(client, order);
  },
};

/** Port 1 on the loopback: nothing listens there, so connecting is refused at once. */
const UNREACHABLE_URL = 'postgres://postgres@127.0.0.1:1/postgres';

/**
 * Replica ids are the cluster's node names (`n1`, `n2`), so scenarios can pause or kill the
 * replica a route decision names. Only running replicas are configured: the adapter models what
 * an application lists at startup.
 */
function adapterFor(cluster: Cluster, needs: AdapterNeeds = {}) {
  const replicas: Record<string, string> = {};
  for (const node of cluster.replicas()) if (node.running) replicas[node.name] = node.url;
  if (needs.unreachableReplica) replicas[needs.unreachableReplica] = UNREACHABLE_URL;
  return createPgAdapter({
    primary: cluster.primary().url,
    replicas,
    wait: 'auto',
    poolSize: needs.singleConnection ? 1 : 4,
    // Opt-in adapter option, for runs of the suite (and the fault campaign) with it on.
    pipelineCapture: process.env['TIDEMARK_PG_PIPELINE_CAPTURE'] === '1',
  });
}

/** The PostgreSQL adapter against a local cluster of the given server version. */
export function pgTarget(
  clusterTarget: PgClusterTarget,
): ConformanceTarget<PgPosition, PoolClient> {
  return {
    name: clusterTarget,
    startCluster: () => startCluster(clusterTarget, { replicas: 2 }),
    createAdapter: adapterFor,
    workload: pgWorkload,
    contract: pgContract,
    badPositions: {
      // 2^40 bytes (1 TiB) of WAL past the primary: no test cluster gets there.
      impossible: (current) => ({ timeline: current.timeline, lsn: current.lsn + (1n << 40n) }),
      invalidText: 'not-a-pg-position',
    },
  };
}
