import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Router, Session } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import type pg from 'pg';
import type { BenchAdapter, BenchDatabase } from './databases.js';

/** Statements per operation as the PostgreSQL server logged them, and as the adapter counted. */
export interface ServerCheck {
  readonly writes: number;
  /** Raw driver: statements the server logged per autocommit INSERT. */
  readonly rawPerWrite: number;
  /** Tidemark, `transaction: false`: logged per write, and the adapter's own count. */
  readonly autocommitPerWrite: number;
  readonly autocommitCounted: number;
  /** Tidemark, default managed transaction. */
  readonly managedPerWrite: number;
  readonly managedCounted: number;
}

const LOGGED = (pid: number) => new RegExp(`\\[${pid}\\] LOG:  (statement|execute [^:]*):`, 'g');

/**
 * Cross-check of the adapter's round-trip counter against the server, PostgreSQL on the host only
 * (pg15, pg18: the harness writes each node's log to `<run dir>/<node>.log` next to its data
 * directory). `log_statement = 'all'` for the time of the check; the write pools hold one
 * connection each, whose backend pid tells its lines apart. One simple-query message with two
 * statements (the adapter's `COMMIT; SELECT position`) is logged as one line: one round trip.
 */
export async function pgServerCheck(
  cluster: Cluster,
  db: BenchDatabase<pg.PoolClient>,
  writes = 50,
): Promise<ServerCheck | undefined> {
  const primary = cluster.primary();
  const [row] = (await cluster.exec(primary.name, 'SHOW data_directory')) as Array<{
    data_directory: string;
  }>;
  const log = row ? join(dirname(row.data_directory), `${primary.name}.log`) : undefined;
  if (!log || !exists(log)) return undefined;
  const replicas = Object.fromEntries(cluster.replicas().map((n) => [n.name, n.url]));
  const { createPgAdapter } = await import('@tidemark/pg');
  const adapter = createPgAdapter({
    primary: primary.url,
    replicas,
    poolSize: 1,
  }) as unknown as BenchAdapter<pg.PoolClient>;
  const router = new Router({ adapter, cluster: 'check' });
  const raw = db.openPool(primary.url);
  const pidOf = (client: pg.PoolClient) =>
    client.query('SELECT pg_backend_pid() AS pid').then((r) => Number(r.rows[0].pid));
  await cluster.exec(primary.name, "ALTER SYSTEM SET log_statement = 'all'");
  await cluster.exec(primary.name, 'SELECT pg_reload_conf()');
  try {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const session = new Session();
    const rawPid = await raw.use(pidOf);
    const tmPid = await router.write(session, pidOf, { transaction: false });
    const insert = (client: pg.PoolClient) => db.orders.placeOrder(client, 0, 'server check');
    const measure = async (pid: number, run: () => Promise<unknown>) => {
      const offset = statSync(log).size;
      const before = adapter.roundTrips();
      for (let i = 0; i < writes; i++) await run();
      await new Promise((resolve) => setTimeout(resolve, 300)); // let the log catch up
      const text = readFileSync(log).subarray(offset).toString('utf8');
      const after = adapter.roundTrips();
      return {
        logged: (text.match(LOGGED(pid)) ?? []).length / writes,
        counted: (after.roundTrips - before.roundTrips) / writes,
      };
    };
    const rawResult = await measure(rawPid, () => raw.use(insert));
    const autocommit = await measure(tmPid, () =>
      router.write(session, insert, { transaction: false }),
    );
    const managed = await measure(tmPid, () => router.write(session, insert));
    return {
      writes,
      rawPerWrite: rawResult.logged,
      autocommitPerWrite: autocommit.logged,
      autocommitCounted: autocommit.counted,
      managedPerWrite: managed.logged,
      managedCounted: managed.counted,
    };
  } finally {
    await cluster.exec(primary.name, 'ALTER SYSTEM RESET log_statement');
    await cluster.exec(primary.name, 'SELECT pg_reload_conf()');
    await router.close();
    await raw.end();
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
