import {
  type RoutedRead,
  Router,
  type RouterOptions,
  type Session,
  type WriteResult,
} from '@tidemark/core';
import { MongoAdapter, type MongoConnection } from '@tidemark/mongodb';
import { createMysqlAdapter, type MysqlAdapter } from '@tidemark/mysql';
import { createPgAdapter } from '@tidemark/pg';
import { type Cluster, mongoReplicaSetUri, startCluster } from '@tidemark/test-clusters';
import type { DbSystemName } from '../../src/index.js';

// biome-ignore lint/suspicious/noExplicitAny: one test body drives routers of every adapter.
export type AnyRouter = Router<any, any>;
// biome-ignore lint/suspicious/noExplicitAny: either flavour's position type (see AnyRouter).
type LooseMysqlAdapter = MysqlAdapter<any>;
// biome-ignore lint/suspicious/noExplicitAny: see AnyRouter.
type LooseRouterOptions = Partial<Omit<RouterOptions<any, any>, 'adapter'>>;

/** One real cluster and how to write and read a row on it through a router. */
export interface Engine {
  readonly target: string;
  readonly system: DbSystemName;
  readonly cluster: Cluster;
  /** A router over a fresh adapter for this cluster (closed by the caller). */
  router(options?: LooseRouterOptions): AnyRouter;
  /** Insert row `id` as the session. */
  write(router: AnyRouter, session: Session, id: number): Promise<void>;
  /** Insert row `id` as the session, and say whether its earlier write was lost. */
  writeDetailed(router: AnyRouter, session: Session, id: number): Promise<WriteResult<void>>;
  /** Read through the router whether row `id` is visible. */
  read(router: AnyRouter, session: Session, id: number): Promise<RoutedRead<boolean>>;
  /** Node URLs keyed as decisions name them (`primary`, replica ids). */
  nodes(): Record<string, string>;
}

const SUPPORTED = /^(pg\d+|mysql97|mariadb1011|mongo-sim)$/;

/**
 * Targets to run: env TIDEMARK_TARGETS (comma separated), default pg15, mysql97 and mongo-sim
 * (the MongoDB adapter on the harness's replica-set simulator: no mongod can be installed here).
 * A requested target that cannot start fails the suite; one this package does not drive is
 * reported and left out.
 */
export function engineTargets(): string[] {
  const requested = (process.env['TIDEMARK_TARGETS'] ?? 'pg15,mysql97,mongo-sim')
    .split(',')
    .map((target) => target.trim())
    .filter((target) => target !== '');
  const targets = requested.filter((target) => SUPPORTED.test(target));
  const ignored = requested.filter((target) => !SUPPORTED.test(target));
  if (ignored.length > 0) {
    console.warn(`\n*** @tidemark/otel: targets ${ignored.join(', ')} not driven here. ***\n`);
  }
  if (targets.length === 0) {
    console.warn(
      `\n*** @tidemark/otel integration tests SKIPPED: TIDEMARK_TARGETS=${JSON.stringify(process.env['TIDEMARK_TARGETS'])} names no pg, mysql97, mariadb1011 or mongo-sim target. ***\n`,
    );
  }
  return targets;
}

export async function startEngine(target: string): Promise<Engine> {
  const cluster = await startCluster(target, { replicas: 2 });
  const nodes = () => ({
    primary: cluster.primary().url,
    ...Object.fromEntries(cluster.replicas().map((node) => [node.name, node.url])),
  });
  const replicas = () =>
    Object.fromEntries(cluster.replicas().map((node) => [node.name, node.url]));
  if (target === 'mongo-sim') return mongoEngine(cluster, nodes);
  await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
  if (target.startsWith('pg')) {
    return {
      target,
      system: 'postgresql',
      cluster,
      nodes,
      router: (options = {}) =>
        new Router({
          adapter: createPgAdapter({
            primary: cluster.primary().url,
            replicas: replicas(),
            poolSize: 4,
          }),
          cluster: 'main',
          ...options,
        }),
      write: (router, session, id) =>
        router.write(session, async (c) => {
          await c.query('INSERT INTO items VALUES ($1)', [id]);
        }),
      writeDetailed: (router, session, id) =>
        router.writeDetailed(session, async (c) => {
          await c.query('INSERT INTO items VALUES ($1)', [id]);
        }),
      read: (router, session, id) =>
        router.readDetailed(session, async (c) => {
          const { rows } = await c.query('SELECT 1 FROM items WHERE id = $1', [id]);
          return rows.length === 1;
        }),
    };
  }
  const flavour = target === 'mysql97' ? 'mysql' : 'mariadb';
  return {
    target,
    system: flavour,
    cluster,
    nodes,
    router: (options = {}) =>
      new Router({
        adapter: createMysqlAdapter({
          flavour,
          primary: cluster.primary().url,
          replicas: replicas(),
          poolSize: 4,
        }) as LooseMysqlAdapter,
        cluster: 'main',
        ...options,
      }),
    write: (router, session, id) =>
      router.write(session, async (c) => {
        await c.query('INSERT INTO items VALUES (?)', [id]);
      }),
    writeDetailed: (router, session, id) =>
      router.writeDetailed(session, async (c) => {
        await c.query('INSERT INTO items VALUES (?)', [id]);
      }),
    read: (router, session, id) =>
      router.readDetailed(session, async (c) => {
        const [rows] = await c.query('SELECT 1 FROM items WHERE id = ?', [id]);
        return (rows as unknown[]).length === 1;
      }),
  };
}

/**
 * The MongoDB adapter on the test harness's replica-set SIMULATOR (no mongod can be installed
 * here): it shows what the bridge reports for the adapter's decisions, not how a real mongod
 * behaves. Writes use w=1 so they complete while the secondaries' replay is paused.
 */
function mongoEngine(cluster: Cluster, nodes: () => Record<string, string>): Engine {
  const items = (c: MongoConnection) => c.db.collection<{ _id: number }>('items');
  return {
    target: 'mongo-sim',
    system: 'mongodb',
    cluster,
    nodes,
    router: (options = {}) =>
      new Router({
        adapter: new MongoAdapter({
          uri: mongoReplicaSetUri(cluster, '1'),
          database: 'tidemark_otel',
          replicas: Object.fromEntries(
            cluster.replicas().map((node) => [node.name, `${node.host}:${node.port}`]),
          ),
          allowNonMajorityWrites: true,
          clientOptions: { serverSelectionTimeoutMS: 2000, heartbeatFrequencyMS: 500 },
        }),
        cluster: 'main',
        ...options,
      }),
    write: (router, session, id) =>
      router.write(session, async (c: MongoConnection) => {
        await items(c).insertOne({ _id: id }, { session: c.session });
      }),
    writeDetailed: (router, session, id) =>
      router.writeDetailed(session, async (c: MongoConnection) => {
        await items(c).insertOne({ _id: id }, { session: c.session });
      }),
    read: (router, session, id) =>
      router.readDetailed(session, async (c: MongoConnection) => {
        const found = await items(c).findOne({ _id: id }, { session: c.session });
        return found !== null;
      }),
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll `check` until it returns true, or fail after `timeoutMs`. */
export async function eventually(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(25);
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
}
