import { type Cluster, eventually, startCluster } from '@tidemark/test-clusters';
import pg from 'pg';
import { createPgAdapter, type PgAdapter, type PgAdapterOptions } from '../../src/index.js';

/**
 * PostgreSQL targets to run against: env TIDEMARK_TARGETS (comma separated; targets of other
 * databases are ignored), default pg15. A requested target that cannot start fails the suite.
 */
export function pgTargets(): string[] {
  const requested = (process.env['TIDEMARK_TARGETS'] ?? 'pg15')
    .split(',')
    .map((target) => target.trim())
    .filter((target) => target !== '');
  const targets = requested.filter((target) => /^pg\d+$/.test(target));
  if (targets.length === 0) {
    console.warn(
      `\n*** @tidemark/pg integration tests SKIPPED: TIDEMARK_TARGETS=${JSON.stringify(process.env['TIDEMARK_TARGETS'])} names no PostgreSQL target (pg15, pg18, pg19). ***\n`,
    );
  }
  return targets;
}

/** Major version of a target name such as pg19. */
export function majorOf(target: string): number {
  return Number(target.replace(/^pg/, ''));
}

export async function startPgCluster(target: string, replicas = 2): Promise<Cluster> {
  return startCluster(target, { replicas });
}

/** A cluster whose primary has an empty `items (id int PRIMARY KEY)` table, replicated. */
export async function startItemsCluster(target: string, replicas = 2): Promise<Cluster> {
  const cluster = await startPgCluster(target, replicas);
  await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
  await waitForReplicasToCatchUp(cluster);
  return cluster;
}

/** Whether `items` shows row `id` on this connection. */
export async function hasItem(client: pg.ClientBase, id: number): Promise<boolean> {
  return ((await client.query('SELECT 1 FROM items WHERE id = $1', [id])).rowCount ?? 0) === 1;
}

export function adapterFor(cluster: Cluster, options: Partial<PgAdapterOptions> = {}): PgAdapter {
  return createPgAdapter({
    primary: cluster.primary().url,
    replicas: Object.fromEntries(cluster.replicas().map((node) => [node.name, node.url])),
    poolSize: 4,
    ...options,
  });
}

/** A plain client for checks that must not go through the adapter. */
export async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client(url);
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

export async function withConnection<T>(
  url: string,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = await connect(url);
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Poll `check` until it returns a value other than undefined, or fail after `timeoutMs`. */
export { eventually, noSignal, sleep } from '@tidemark/test-clusters';

/** Wait until every running replica replays at least the primary's current insert position. */
export async function waitForReplicasToCatchUp(cluster: Cluster): Promise<void> {
  const target = await withConnection(cluster.primary().url, async (client) => {
    const { rows } = await client.query('SELECT pg_current_wal_flush_lsn()::text AS lsn');
    return rows[0].lsn as string;
  });
  for (const replica of cluster.replicas().filter((node) => node.running)) {
    await eventually(`${replica.name} to replay ${target}`, () =>
      withConnection(replica.url, async (client) => {
        const { rows } = await client.query(
          'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done',
          [target],
        );
        return rows[0].done ? true : undefined;
      }),
    );
  }
}
