/**
 * `pnpm --filter @tidemark/example-fleet start`: a PostgreSQL 15 primary with two replicas and a
 * private Redis (the test harness's local processes), three app instances sharing one view of
 * the replicas. Prints each instance's role and the probes it sent in 3 s, then closes the prober
 * and shows another instance taking over.
 */
import {
  type Cluster,
  type RedisServer,
  startCluster,
  startRedisServer,
} from '@tidemark/test-clusters';
import { Redis } from 'ioredis';
import { countProbes, createInstance, type OrdersRouter } from './instance.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  let cluster: Cluster | undefined;
  let redisServer: RedisServer | undefined;
  const clients: Redis[] = [];
  const routers: OrdersRouter[] = [];
  try {
    cluster = await startCluster('pg15', { replicas: 2 });
    redisServer = await startRedisServer();
    const replicas = Object.fromEntries(cluster.replicas().map((node) => [node.name, node.url]));
    for (let i = 0; i < 3; i++) {
      const redis = new Redis(redisServer.url);
      clients.push(redis);
      routers.push(createInstance({ primary: cluster.primary().url, replicas, redis }));
    }
    await Promise.all(routers.map((router) => router.ready()));
    await sleep(1000);
    const probes = routers.map(countProbes);
    await sleep(3000);
    routers.forEach((router, i) => {
      const sent = [...probes[i]!].map(([id, n]) => `${id} ${n}`).join(', ') || 'none';
      console.log(`instance ${i}: ${router.sharedView?.role()}, probes in 3 s: ${sent}`);
    });
    const prober = routers.findIndex((router) => router.sharedView?.role() === 'prober');
    const closedAt = Date.now();
    await routers[prober]!.close();
    console.log(`instance ${prober} closed (it gives the lease up)`);
    while (!routers.some((router, i) => i !== prober && router.sharedView?.role() === 'prober')) {
      await sleep(20);
    }
    const next = routers.findIndex(
      (router, i) => i !== prober && router.sharedView?.role() === 'prober',
    );
    console.log(`instance ${next} is the prober ${Date.now() - closedAt} ms later`);
  } finally {
    await Promise.all(routers.map((router) => router.close()));
    for (const redis of clients) redis.disconnect();
    await redisServer?.stop();
    await cluster?.teardown();
  }
}

await main();
