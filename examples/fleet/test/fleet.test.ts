/**
 * The fleet example on a real PostgreSQL 15 cluster (a primary and two replicas) and a real
 * Redis: with the shared view one instance probes and the others send no background probes;
 * without it (the control) every instance probes every replica. Closing the prober hands the
 * lease on, and a follower's session still reads its own write with replay paused.
 */
import { Session } from '@tidemark/core';
import {
  type Cluster,
  type RedisServer,
  startCluster,
  startRedisServer,
} from '@tidemark/test-clusters';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countProbes, createInstance, type OrdersRouter } from '../src/instance.js';

let cluster: Cluster;
let redisServer: RedisServer;
let replicas: Record<string, string>;
const clients: Redis[] = [];
let routers: OrdersRouter[] = [];

beforeAll(async () => {
  cluster = await startCluster('pg15', { replicas: 2 });
  redisServer = await startRedisServer();
  replicas = Object.fromEntries(cluster.replicas().map((node) => [node.name, node.url]));
  await cluster.exec(cluster.primary().name, 'CREATE TABLE orders (id bigint PRIMARY KEY)');
});
afterEach(async () => {
  await Promise.all(routers.map((router) => router.close()));
  routers = [];
  for (const redis of clients.splice(0)) redis.disconnect();
});
afterAll(async () => {
  await redisServer?.stop();
  await cluster?.teardown();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function fleet(n: number, shared: boolean): Promise<OrdersRouter[]> {
  for (let i = 0; i < n; i++) {
    const redis = shared ? new Redis(redisServer.url) : undefined;
    if (redis) clients.push(redis);
    routers.push(
      createInstance({ primary: cluster.primary().url, replicas, ...(redis && { redis }) }),
    );
  }
  await Promise.all(routers.map((router) => router.ready()));
  await sleep(1000);
  return routers;
}

/** Background probes per instance (all replicas together) over `ms`. */
async function probesOver(instances: OrdersRouter[], ms: number): Promise<number[]> {
  const counts = instances.map(countProbes);
  await sleep(ms);
  return counts.map((count) => [...count.values()].reduce((sum, n) => sum + n, 0));
}

describe('fleet example', () => {
  it('with the shared view one instance probes; without it every instance does', async () => {
    const shared = await probesOver(await fleet(3, true), 2000);
    expect(routers.map((router) => router.sharedView?.role()).sort()).toEqual([
      'follower',
      'follower',
      'prober',
    ]);
    const proberIndex = routers.findIndex((router) => router.sharedView?.role() === 'prober');
    // 2 replicas, every 200 ms, for 2 s: about 20.
    expect(shared[proberIndex]).toBeGreaterThan(10);
    expect(shared.filter((_, i) => i !== proberIndex)).toEqual([0, 0]);
    await Promise.all(routers.map((router) => router.close()));
    routers = [];
    const local = await probesOver(await fleet(3, false), 2000);
    for (const count of local) expect(count).toBeGreaterThan(10);
  });

  it('closing the prober hands the lease on; a follower still reads its own write with replay paused', async () => {
    const instances = await fleet(3, true);
    const prober = instances.find((router) => router.sharedView?.role() === 'prober')!;
    await prober.close();
    const rest = instances.filter((router) => router !== prober);
    const deadline = Date.now() + 5000;
    while (!rest.some((router) => router.sharedView?.role() === 'prober')) {
      if (Date.now() > deadline) throw new Error('no instance took the lease over within 5 s');
      await sleep(20);
    }
    for (const node of cluster.replicas()) await cluster.pauseReplay(node.name);
    try {
      const follower = rest.find((router) => router.sharedView?.role() === 'follower')!;
      const session = new Session();
      await follower.write(session, (c: pg.PoolClient) => c.query('INSERT INTO orders VALUES (1)'));
      const found = await follower.read(
        session,
        async (c: pg.PoolClient) => (await c.query('SELECT 1 FROM orders WHERE id = 1')).rowCount,
      );
      expect(found).toBe(1);
      // The control: the same read without the session's position finds nothing on a replica.
      const naive = await follower.readDetailed(
        new Session(),
        async (c: pg.PoolClient) => (await c.query('SELECT 1 FROM orders WHERE id = 1')).rowCount,
      );
      expect(naive.decision.target).not.toBe('primary');
      expect(naive.value).toBe(0);
    } finally {
      for (const node of cluster.replicas()) await cluster.resumeReplay(node.name);
    }
  });
});
