// Shared wiring of the integration test's app instances and job worker (run as child processes).
import { Router, TokenCodec } from '@tidemark/core';
import { createPgAdapter } from '@tidemark/pg';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { RedisTokenStore } from '../../../redis/src/index.js';
import { TokenCarrier, tokenLifetimeSeconds } from '../../src/index.js';

export const QUEUE = 'tidemark-orders';
/** Replicas lagging more than this are not read from; long enough to outlast the test. */
const HEALTH = { maxLagSeconds: 300, maxSampleAgeMs: 1000 };

export function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`missing env ${name}`);
  return value;
}

export function tokenCodec(): TokenCodec {
  return new TokenCodec({
    keys: [
      { id: 'k2', secret: env('TOKEN_SECRET') },
      { id: 'k1', secret: env('OLD_TOKEN_SECRET') },
    ],
    maxAgeSeconds: tokenLifetimeSeconds(HEALTH),
  });
}

export function redisConnection(): Redis {
  // BullMQ workers need maxRetriesPerRequest: null.
  return new Redis({
    host: '127.0.0.1',
    port: Number(env('REDIS_PORT')),
    maxRetriesPerRequest: null,
  });
}

export async function createRouter() {
  const adapter = createPgAdapter({
    primary: env('PRIMARY_URL'),
    replicas: { r1: env('REPLICA_URL') },
    poolSize: 3,
  });
  const router = new Router({
    adapter,
    cluster: 'main',
    health: HEALTH,
    wait: { budgetMs: 100 },
    badToken: 'ignore',
  });
  await router.ready();
  return { router, codec: adapter.codec };
}

export function createCarrier(codecs: { main: unknown }, redis: Redis | undefined): TokenCarrier {
  const codec = tokenCodec();
  const store = redis
    ? new RedisTokenStore({
        redis,
        codecs: codecs as RedisTokenStore['codecs'],
        ttlSeconds: tokenLifetimeSeconds(HEALTH),
      })
    : undefined;
  return new TokenCarrier({
    tokens: codec,
    // The carrier merges header, cookie and store with the cluster's codec.
    codecs: codecs as RedisTokenStore['codecs'],
    lifetimeSeconds: tokenLifetimeSeconds(HEALTH),
    logger: false,
    ...(store ? { store } : {}),
  });
}

export async function insertOrder(
  client: pg.PoolClient,
  user: string,
  note: string,
): Promise<number> {
  const { rows } = await client.query<{ id: string }>(
    'INSERT INTO orders (customer, note) VALUES ($1, $2) RETURNING id',
    [user, note],
  );
  return Number(rows[0]?.id);
}

export async function ordersOf(client: pg.PoolClient, user: string): Promise<number[]> {
  const { rows } = await client.query<{ id: string }>(
    'SELECT id FROM orders WHERE customer = $1 ORDER BY id',
    [user],
  );
  return rows.map((row) => Number(row.id));
}
