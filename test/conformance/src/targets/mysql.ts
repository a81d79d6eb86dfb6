import {
  createMysqlAdapter,
  GtidSet,
  MariadbGtidPosition,
  type MysqlAdapter,
} from '@tidemark/mysql';
import { type Cluster, startCluster } from '@tidemark/test-clusters';
import type { PoolConnection } from 'mysql2/promise';
import type {
  AdapterNeeds,
  BadPositions,
  ConformanceTarget,
  ContractOps,
  Workload,
} from '../types.js';

/** The cluster targets the MySQL/MariaDB adapter is proven against; they share this module. */
export type MysqlClusterTarget = 'mysql97' | 'mariadb1011';

const SETUP_SQL = `CREATE TABLE IF NOT EXISTS orders (
  id BIGINT PRIMARY KEY,
  customer BIGINT NOT NULL,
  note VARCHAR(200) NOT NULL,
  KEY orders_by_customer (customer, id)
)`;

/** Ids of read-only probes never collide with real orders (those are positive). */
let probeId = -Date.now() * 100;

export const mysqlWorkload: Workload<PoolConnection> = {
  async setup(cluster: Cluster) {
    await cluster.exec(cluster.primary().name, SETUP_SQL);
  },
  async insertOrder(connection, order) {
    await connection.query('INSERT INTO orders (id, customer, note) VALUES (?, ?, ?)', [
      order.id,
      order.customer,
      order.note,
    ]);
  },
  async ordersOf(connection, customer) {
    const [rows] = (await connection.query(
      'SELECT id FROM orders WHERE customer = ? ORDER BY id DESC LIMIT 20',
      [customer],
    )) as unknown as [Array<{ id: number | string }>];
    // BIGINT arrives as a number (or text with supportBigNumbers); the suite's ids stay below 2^53.
    return rows.map((row) => Number(row.id));
  },
  async tryWrite(connection) {
    probeId -= 1;
    await connection.query('INSERT INTO orders (id, customer, note) VALUES (?, -1, ?)', [
      probeId,
      'must fail when read-only',
    ]);
  },
};

export const mysqlContract: ContractOps<PoolConnection> = {
  async slowRead(connection, seconds) {
    await connection.query('SELECT SLEEP(?)', [seconds]);
  },
  async badQuery(connection) {
    await connection.query('SELEC 1');
  },
  // 1792: a write in a READ ONLY transaction. A MySQL replica with super_read_only answers 1290
  // first; the session is read-only there all the same.
  isReadOnlyRefusal: (error) => {
    const errno = (error as { errno?: unknown } | undefined)?.errno;
    return errno === 1792 || errno === 1290;
  },
  async insertInOpenTransaction(connection, order) {
    await connection.query('START TRANSACTION');
    await mysqlWorkload.insertOrder(connection, order);
  },
};

/** Port 1 on the loopback: nothing listens there, so connecting is refused at once. */
const UNREACHABLE_URL = 'mysql://root@127.0.0.1:1/test';

/** 2^40 transactions past the primary: no test cluster gets there. */
const FAR_AHEAD = 1n << 40n;

/**
 * Far ahead of `current` for every server in it, so also for the primary's own UUID (the
 * primary wrote the workload's table, so it is in its own gtid_executed): the adapter's verdict
 * is then `impossible` (a transaction of the primary it never issued), not `other-history`.
 */
const mysqlBadPositions: BadPositions<GtidSet> = {
  impossible: (current) =>
    current.union(
      GtidSet.fromEntries(
        current.entries.map((entry) => {
          const last = entry.intervals[entry.intervals.length - 1]!.end;
          return {
            uuid: entry.uuid,
            tag: entry.tag,
            intervals: [{ start: last + FAR_AHEAD, end: last + FAR_AHEAD }],
          };
        }),
      ),
    ),
  invalidText: 'not-a-mysql-position',
};

/** Every domain of `current` far ahead, under the server id that wrote it (the primary). */
const mariadbBadPositions: BadPositions<MariadbGtidPosition> = {
  impossible: (current) =>
    MariadbGtidPosition.fromGtids(
      current.gtids.map((gtid) => ({ ...gtid, seq: gtid.seq + FAR_AHEAD })),
    ),
  invalidText: 'not-a-mariadb-position',
};

function flavourOf(target: MysqlClusterTarget): 'mysql' | 'mariadb' {
  return target === 'mysql97' ? 'mysql' : 'mariadb';
}

/**
 * Replica ids are the cluster's node names (`n1`, `n2`), so scenarios can pause or kill the
 * replica a route decision names. Only running replicas are configured: the adapter models what
 * an application lists at startup.
 */
function adapterFor(target: MysqlClusterTarget, cluster: Cluster, needs: AdapterNeeds = {}) {
  const replicas: Record<string, string> = {};
  for (const node of cluster.replicas()) if (node.running) replicas[node.name] = node.url;
  if (needs.unreachableReplica) replicas[needs.unreachableReplica] = UNREACHABLE_URL;
  return createMysqlAdapter({
    flavour: flavourOf(target),
    primary: cluster.primary().url,
    replicas,
    poolSize: needs.singleConnection ? 1 : 4,
  });
}

/** The MySQL adapter against a local MySQL 9.7 cluster. */
export function mysqlTarget(): ConformanceTarget<GtidSet, PoolConnection> {
  return {
    name: 'mysql97',
    startCluster: () => startCluster('mysql97', { replicas: 2 }),
    createAdapter: (cluster, needs) =>
      adapterFor('mysql97', cluster, needs) as MysqlAdapter<GtidSet>,
    workload: mysqlWorkload,
    contract: mysqlContract,
    badPositions: mysqlBadPositions,
  };
}

/** The same adapter, MariaDB flavour, against a local MariaDB 10.11 cluster. */
export function mariadbTarget(): ConformanceTarget<MariadbGtidPosition, PoolConnection> {
  return {
    name: 'mariadb1011',
    startCluster: () => startCluster('mariadb1011', { replicas: 2 }),
    createAdapter: (cluster, needs) =>
      adapterFor('mariadb1011', cluster, needs) as MysqlAdapter<MariadbGtidPosition>,
    workload: mysqlWorkload,
    contract: mysqlContract,
    badPositions: mariadbBadPositions,
  };
}
