import { type Cluster, eventually, noSignal, startCluster } from '@tidemark/test-clusters';
import mysql, { type Connection, type PoolConnection, type RowDataPacket } from 'mysql2/promise';
import {
  createMysqlAdapter,
  type GtidSet,
  type MariadbGtidPosition,
  type MysqlAdapter,
  type MysqlAdapterOptions,
} from '../../src/index.js';

/** The cluster targets this package is proven against (local harness names). */
export const MYSQL_TARGETS = ['mysql97', 'mariadb1011'] as const;
export type MysqlTarget = (typeof MYSQL_TARGETS)[number];

/**
 * Targets to run: env TIDEMARK_TARGETS (comma separated; other databases' targets are ignored),
 * default both. A requested target whose cluster cannot start FAILS its suite with the harness's
 * reason (startCluster throws in beforeAll); it is never skipped.
 */
export function mysqlTargets(): MysqlTarget[] {
  const text = process.env['TIDEMARK_TARGETS'];
  const requested =
    text === undefined || text.trim() === ''
      ? [...MYSQL_TARGETS]
      : text
          .split(',')
          .map((target) => target.trim())
          .filter((target) => target !== '');
  const targets = requested.filter((target): target is MysqlTarget =>
    (MYSQL_TARGETS as readonly string[]).includes(target),
  );
  if (targets.length === 0) {
    console.warn(
      `\n*** @tidemark/mysql integration tests SKIPPED: TIDEMARK_TARGETS=${JSON.stringify(text)} names no MySQL/MariaDB target (${MYSQL_TARGETS.join(', ')}). ***\n`,
    );
  }
  return targets;
}

export function flavourOf(target: MysqlTarget): 'mysql' | 'mariadb' {
  return target === 'mysql97' ? 'mysql' : 'mariadb';
}

export async function startMysqlCluster(target: MysqlTarget, replicas = 2): Promise<Cluster> {
  return startCluster(target, { replicas });
}

/** A cluster whose primary has an empty `items (id int PRIMARY KEY)` table. */
export async function startItemsCluster(target: MysqlTarget, replicas = 2): Promise<Cluster> {
  const cluster = await startMysqlCluster(target, replicas);
  await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
  return cluster;
}

/** Whether `items` shows row `id` on this connection. */
export async function hasItem(connection: PoolConnection, id: number): Promise<boolean> {
  const [result] = (await connection.query('SELECT 1 FROM items WHERE id = ?', [
    id,
  ])) as unknown as [unknown[]];
  return result.length === 1;
}

/** Either adapter, typed loosely enough for tests that run against both flavours. */
export type AnyMysqlAdapter = MysqlAdapter<GtidSet> | MysqlAdapter<MariadbGtidPosition>;
// biome-ignore lint/suspicious/noExplicitAny: tests drive both position types through one API.
export type LooseAdapter = MysqlAdapter<any>;

export function adapterFor(
  cluster: Cluster,
  target: MysqlTarget,
  options: Partial<Omit<MysqlAdapterOptions, 'flavour'>> = {},
): LooseAdapter {
  const replicas: Record<string, string> = {};
  for (const node of cluster.replicas()) if (node.running) replicas[node.name] = node.url;
  return createMysqlAdapter({
    flavour: flavourOf(target),
    primary: cluster.primary().url,
    replicas,
    poolSize: 4,
    ...options,
  });
}

/** A plain connection for checks that must not go through the adapter. */
export async function connect(url: string): Promise<Connection> {
  const connection = await mysql.createConnection(url);
  connection.on('error', () => undefined);
  return connection;
}

export async function withConnection<T>(
  url: string,
  fn: (connection: Connection) => Promise<T>,
): Promise<T> {
  const connection = await connect(url);
  try {
    return await fn(connection);
  } finally {
    await connection.end().catch(() => undefined);
  }
}

export async function rows(connection: Connection, sql: string, values: unknown[] = []) {
  const [result] = await connection.query<RowDataPacket[]>(sql, values);
  return result;
}

/** Poll `check` until it returns a value other than undefined, or fail after `timeoutMs`. */
export { eventually, noSignal, sleep } from '@tidemark/test-clusters';

/** Wait until every running replica has applied the primary's current position. */
export async function waitForReplicasToCatchUp(
  cluster: Cluster,
  adapter: LooseAdapter,
): Promise<void> {
  const primary = await adapter.probePrimary({ signal: noSignal() });
  for (const replica of cluster.replicas().filter((node) => node.running)) {
    if (!adapter.replicas.includes(replica.name)) continue;
    await eventually(`${replica.name} to apply ${String(primary)}`, async () => {
      const probe = await adapter.probe(replica.name, { signal: noSignal(), primary });
      return adapter.codec.compare(probe.applied, primary) === 'covered' ? true : undefined;
    });
  }
}

/**
 * Wait until the router's monitor has sampled every replica after this call and found its
 * applier running. Restarting an applier (to change its delay) leaves the monitor with a
 * sample of the stopped applier for up to one interval; a read routed on that sample skips the
 * wait (a paused replica will not catch up) and falls back to the primary at once.
 */
export async function waitForMonitorToSeeAppliersRunning(monitor: {
  states(): ReadonlyArray<{ id: string; paused: boolean; reachable: boolean; sampledAt: number }>;
}): Promise<void> {
  const before = new Map(monitor.states().map((state) => [state.id, state.sampledAt]));
  await eventually('the monitor to see every applier running', async () =>
    monitor
      .states()
      .every(
        (state) =>
          state.sampledAt > (before.get(state.id) ?? Number.NEGATIVE_INFINITY) &&
          state.reachable &&
          !state.paused,
      )
      ? true
      : undefined,
  );
}

/**
 * Delay the applier of every replica of `cluster` by `seconds` (a replica that is slow, not
 * stopped); 0 removes the delay. MariaDB counts the delay from the event's timestamp, which has
 * whole seconds, so its waits run up to a second longer than the delay.
 */
export async function setApplyDelay(
  cluster: Cluster,
  target: MysqlTarget,
  seconds: number,
): Promise<void> {
  const mysqlFlavour = flavourOf(target) === 'mysql';
  // MySQL needs only the applier stopped to change the delay; MariaDB both threads.
  for (const node of cluster.replicas()) {
    await cluster.exec(node.name, mysqlFlavour ? 'STOP REPLICA SQL_THREAD' : 'STOP SLAVE');
    await cluster.exec(
      node.name,
      mysqlFlavour
        ? `CHANGE REPLICATION SOURCE TO SOURCE_DELAY = ${seconds}`
        : `CHANGE MASTER TO MASTER_DELAY = ${seconds}`,
    );
    await cluster.exec(node.name, mysqlFlavour ? 'START REPLICA SQL_THREAD' : 'START SLAVE');
  }
}
