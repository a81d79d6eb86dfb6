/**
 * One app instance of the shared replica view tests, run as its own process (`tsx`). It builds a
 * router over the cluster named in TIDEMARK_VIEW_APP (JSON), optionally with a shared view over
 * Redis, reports its role changes on stdout (one JSON line each) and, with `workload`, writes an
 * order and reads it back through the router with the write's session (which must never miss),
 * plus a naive read on a replica right after the write (the control, which misses while replay
 * lags). With `workload: 'reader'` it writes one order, then reads it back over and over with
 * that write's token (every replica has long applied it), each read a new session: reads that
 * need no wait, no primary and no probe, so nothing but the background samples (the shared
 * feed, or its own probes) keeps its view of the replicas current; the reads that waited or went
 * to the primary are what a stale view cost (their times are reported). On SIGTERM (or stdin
 * closing) it prints its totals and exits.
 */
import { Router, Session } from '@tidemark/core';
import { createMysqlAdapter } from '@tidemark/mysql';
import { createPgAdapter } from '@tidemark/pg';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { redisReplicaViewChannel } from '../../src/index.js';

interface AppConfig {
  flavour: 'pg' | 'mysql';
  primary: string;
  replicas: Record<string, string>;
  redisUrl?: string;
  scope: string;
  workload: boolean | 'reader';
  /** Distinct per process, so orders never collide. */
  idBase: number;
}

const config = JSON.parse(process.env['TIDEMARK_VIEW_APP'] ?? '{}') as AppConfig;
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1 }) : undefined;
redis?.on('error', () => undefined);

const adapter =
  config.flavour === 'pg'
    ? createPgAdapter({ primary: config.primary, replicas: config.replicas, poolSize: 2 })
    : createMysqlAdapter({
        flavour: 'mysql',
        primary: config.primary,
        replicas: config.replicas,
        poolSize: 2,
      });
const router = new Router({
  adapter: adapter as never,
  cluster: 'main',
  ...(redis && {
    sharedView: { channel: redisReplicaViewChannel(redis), scope: config.scope },
  }),
}) as unknown as Router<unknown, unknown>;
router.events.on('shared-view', ({ role }) => say({ role, pid: process.pid }));

const totals = {
  writes: 0,
  reads: 0,
  missed: 0,
  naiveReads: 0,
  naiveMissed: 0,
  errors: 0,
  /** Reads of the reader's one order with its token (`workload: 'reader'`). */
  oldReads: 0,
  oldMissed: 0,
};
/** Wall-clock times (ms) of the reader's reads that waited or were served by the primary. */
const oldNotCovered: Array<{ at: number; reason: string }> = [];
let stopping = false;

const sql =
  config.flavour === 'pg'
    ? {
        insert: 'INSERT INTO orders (id, customer, note) VALUES ($1, $2, $3)',
        select: 'SELECT 1 FROM orders WHERE id = $1',
      }
    : {
        insert: 'INSERT INTO orders (id, customer, note) VALUES (?, ?, ?)',
        select: 'SELECT 1 FROM orders WHERE id = ?',
      };
type Runner = { query: (text: string, values: unknown[]) => Promise<unknown> };
const rowCount = (result: unknown): number =>
  Array.isArray(result)
    ? (result[0] as unknown[]).length
    : ((result as pg.QueryResult).rowCount ?? 0);

async function workload(): Promise<void> {
  const replicaUrl = Object.values(config.replicas)[0] as string;
  const naive =
    config.flavour === 'pg'
      ? new pg.Pool({ connectionString: replicaUrl, max: 1 })
      : mysql.createPool({ uri: replicaUrl, connectionLimit: 1 });
  const naiveCount = async (id: number): Promise<number> => {
    if (naive instanceof pg.Pool) {
      return (await naive.query('SELECT 1 FROM orders WHERE id = $1', [id])).rowCount ?? 0;
    }
    const [rows] = await naive.query('SELECT 1 FROM orders WHERE id = ?', [id]);
    return (rows as unknown[]).length;
  };
  let next = config.idBase;
  while (!stopping) {
    const id = next++;
    const session = new Session();
    try {
      await router.write(session, (c) =>
        (c as Runner).query(sql.insert, [id, config.idBase, 'shared view']),
      );
      totals.writes++;
      if ((await naiveCount(id)) === 0) totals.naiveMissed++;
      totals.naiveReads++;
      const found = await router.read(session, async (c) =>
        rowCount(await (c as Runner).query(sql.select, [id])),
      );
      totals.reads++;
      if (found === 0) totals.missed++;
    } catch (error) {
      totals.errors++;
      say({ error: String(error) });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  await naive.end();
}

async function reader(): Promise<void> {
  const id = config.idBase;
  const session = new Session();
  await router.write(session, (c) => (c as Runner).query(sql.insert, [id, id, 'reader']));
  await session.settledWrites();
  const token = { ...session.toTokenData(), issuedAt: Math.floor(Date.now() / 1000) };
  await new Promise((resolve) => setTimeout(resolve, 1000)); // every replica applies it
  while (!stopping) {
    try {
      const { value, decision } = await router.readDetailed(Session.fromToken(token), async (c) =>
        rowCount(await (c as Runner).query(sql.select, [id])),
      );
      totals.oldReads++;
      if (value === 0) totals.oldMissed++;
      if (decision.reason !== 'replica-covered') {
        oldNotCovered.push({ at: Date.now(), reason: decision.reason });
      }
    } catch (error) {
      totals.errors++;
      say({ error: String(error) });
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function main(): Promise<void> {
  await router.ready();
  say({ ready: true, pid: process.pid });
  const running =
    config.workload === 'reader' ? reader() : config.workload ? workload() : Promise.resolve();
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.stdin.once('end', resolve);
    process.stdin.resume();
  });
  stopping = true;
  await running;
  const m = router.metrics();
  say({
    totals,
    oldNotCovered,
    waits: m.waits,
    waitsReached: m.waitsReached,
    primaryReads: m.primaryReads,
    byReason: m.byReason,
    sharedView: m.sharedView,
  });
  await router.close();
  redis?.disconnect();
  process.exit(0);
}

void main().catch((error: unknown) => {
  say({ fatal: String(error) });
  process.exit(1);
});
