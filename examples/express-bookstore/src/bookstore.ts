import { Router, TokenCodec } from '@tidemark/core';
import { TokenCarrier, tokenLifetimeSeconds } from '@tidemark/http';
import { createPgAdapter } from '@tidemark/pg';
import { RedisTokenStore } from '@tidemark/redis';
import type { Cluster, ClusterNode } from '@tidemark/test-clusters';
import type pg from 'pg';
import { startDatabase, startRedis } from './infrastructure.js';

/** How to start the Bookstore's infrastructure. */
export interface BookstoreOptions {
  /**
   * Router `health.maxLagSeconds` (default 10). A paused replica reports an ever-growing lag:
   * raise this to keep it in use while replay is paused, as for a replica a little behind.
   */
  maxLagSeconds?: number;
}

/** Per-API settings: one running Bookstore can serve several APIs (for example a control). */
export interface BookstoreApiOptions {
  /** Use the Redis token store (cross-device read-your-writes). False builds the control. */
  store: boolean;
  /** Where bad tokens are logged; default console. */
  logger?: false | { warn(message: string): void };
}

/** Everything the API needs, started and wired; {@link Bookstore.close} stops all of it. */
export interface Bookstore {
  readonly cluster: Cluster;
  readonly replica: ClusterNode;
  readonly router: Router<unknown, pg.PoolClient>;
  /** Signs and verifies the tokens in cookies and headers. */
  readonly tokens: TokenCodec;
  /** Seconds a token stays useful: cookie Max-Age and store TTL. */
  readonly lifetimeSeconds: number;
  /** Where the token store lives, for the start-up banner. */
  readonly redisDescription: string;
  /** A token carrier for one API (see {@link BookstoreApiOptions}). */
  carrier(options: BookstoreApiOptions): TokenCarrier;
  /** Stop the router, Redis and the database cluster. Idempotent. */
  close(): Promise<void>;
}

/**
 * Start Redis, the PostgreSQL primary and replica, and the router over them. The replica is
 * named `r1` for the router, the token cluster `bookstore`.
 */
export async function startBookstore(options: BookstoreOptions = {}): Promise<Bookstore> {
  const health = { maxLagSeconds: options.maxLagSeconds ?? 10, maxSampleAgeMs: 1000 };
  const lifetimeSeconds = tokenLifetimeSeconds(health);
  // Redis first: it starts in milliseconds, and a failure then leaves no database behind.
  const { redis, description: redisDescription, stop: stopRedis } = await startRedis();
  const cluster = await startDatabase().catch((error: unknown) => {
    stopRedis();
    throw error;
  });
  let router: Router<unknown, pg.PoolClient> | undefined;
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      await router?.close().catch(() => undefined);
      stopRedis();
      await cluster.teardown();
    })();
    return closed;
  };
  try {
    const replica = cluster.replicas()[0];
    if (!replica) throw new Error('the harness started no replica');
    const adapter = createPgAdapter({
      primary: cluster.primary().url,
      replicas: { r1: replica.url },
    });
    const routed = new Router({ adapter, cluster: 'bookstore', health, wait: { budgetMs: 100 } });
    router = routed;
    await routed.ready();
    // A real deployment loads secrets from its secret store; new keys go first, retired ones
    // stay until their tokens expired (`lifetimeSeconds`).
    const secret = process.env['TIDEMARK_SECRET'] ?? 'demo-only-secret-demo-only-secret!';
    const tokens = new TokenCodec({
      keys: [{ id: 'demo1', secret }],
      maxAgeSeconds: lifetimeSeconds,
    });
    const store = new RedisTokenStore({
      redis,
      codecs: { bookstore: adapter.codec },
      ttlSeconds: lifetimeSeconds,
    });
    return {
      cluster,
      replica,
      router,
      tokens,
      lifetimeSeconds,
      redisDescription,
      carrier: (api) =>
        new TokenCarrier({
          tokens,
          lifetimeSeconds,
          // The carrier merges every token source per cluster with the router's codec.
          routers: [routed],
          ...(api.store ? { store } : {}),
          ...(api.logger === undefined ? {} : { logger: api.logger }),
        }),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
