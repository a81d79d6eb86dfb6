import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

const REDIS_SERVER = process.env['REDIS_SERVER_BIN'] ?? '/usr/bin/redis-server';

/** A private redis-server child on a free port, so tests never touch shared Redis state. */
export interface TestRedis {
  readonly port: number;
  readonly url: string;
  client(): Redis;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** `port`: a given port (to bring a stopped server back where its clients reconnect). */
export async function startRedis(options: { port?: number } = {}): Promise<TestRedis> {
  if (!existsSync(REDIS_SERVER)) {
    throw new Error(
      `redis-server not found at ${REDIS_SERVER}; install redis-server or set REDIS_SERVER_BIN.`,
    );
  }
  const port = options.port ?? (await freePort());
  const child: ChildProcess = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const clients: Redis[] = [];
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  probe.on('error', () => undefined);
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if (probe.status !== 'ready') await probe.connect();
      if ((await probe.ping()) === 'PONG') break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`redis-server on port ${port} did not answer PING within 10 s`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  probe.disconnect();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    client() {
      const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      clients.push(client);
      return client;
    },
    async stop() {
      for (const client of clients) client.disconnect();
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
