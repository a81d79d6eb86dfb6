import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { type Cluster, startCluster } from '@tidemark/test-clusters';
import { Redis } from 'ioredis';
import pg from 'pg';

/** Embedded PostgreSQL 18 (harness target pg18): a primary and one streaming replica. */
export async function startDatabase(): Promise<Cluster> {
  const cluster = await startCluster('pg18', { replicas: 1, provider: 'local' });
  const client = new pg.Client(cluster.primary().url);
  await client.connect();
  await client.query(`CREATE TABLE IF NOT EXISTS orders (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer text NOT NULL,
    title text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now())`);
  await client.end();
  // Let the replica replay the table before anything reads from it.
  for (const deadline = Date.now() + 30_000; ; ) {
    const positions = Object.values(await cluster.positions());
    if (positions.length === 2 && positions[0] === positions[1]) break;
    if (Date.now() > deadline) throw new Error('the replica did not catch up within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return cluster;
}

/**
 * The Redis for the token store: REDIS_URL when set, else a private redis-server child on a free
 * port (so the demo never touches a shared Redis).
 */
export async function startRedis(): Promise<{ redis: Redis; description: string; stop(): void }> {
  const url = process.env['REDIS_URL'];
  if (url) {
    const redis = new Redis(url, { maxRetriesPerRequest: 1 });
    return { redis, description: url, stop: () => redis.disconnect() };
  }
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.env['REDIS_SERVER_BIN'] ?? 'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const redis = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined); // ioredis reconnects until redis-server listens
  for (const deadline = Date.now() + 10_000; ; ) {
    if (redis.status === 'ready') break;
    if (Date.now() > deadline || child.exitCode !== null) {
      redis.disconnect();
      child.kill();
      throw new Error('redis-server did not start within 10 s; install it or set REDIS_URL');
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    redis,
    description: `private redis-server on 127.0.0.1:${port}`,
    stop: () => {
      redis.disconnect();
      child.kill('SIGTERM');
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
