/**
 * One app instance's router, as each process of a fleet would build it: the same cluster name
 * and the same Redis everywhere, so every instance joins the same shared view
 * (`tidemark:view:orders`).
 */
import { Router } from '@tidemark/core';
import { createPgAdapter, type PgPosition } from '@tidemark/pg';
import { redisReplicaViewChannel } from '@tidemark/redis';
import type { Redis } from 'ioredis';
import type pg from 'pg';

export interface InstanceConfig {
  primary: string;
  replicas: Record<string, string>;
  /** Omit to run without a shared view: the instance probes every node itself. */
  redis?: Redis;
}

export type OrdersRouter = Router<PgPosition, pg.PoolClient>;

export function createInstance(config: InstanceConfig): OrdersRouter {
  return new Router({
    cluster: 'orders',
    adapter: createPgAdapter({ primary: config.primary, replicas: config.replicas, poolSize: 2 }),
    ...(config.redis && { sharedView: { channel: redisReplicaViewChannel(config.redis) } }),
  });
}

/** Count the background probes an instance sends to each replica (the load the view removes). */
export function countProbes(router: OrdersRouter): Map<string, number> {
  const counts = new Map<string, number>();
  router.monitor.events.on('probe', ({ id }) => counts.set(id, (counts.get(id) ?? 0) + 1));
  return counts;
}
