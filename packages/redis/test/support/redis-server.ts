import { type RedisServer, startRedisServer } from '@tidemark/test-clusters';
import { Redis } from 'ioredis';

/** The harness's private redis-server, plus ioredis clients that stop with it. */
export interface TestRedis extends RedisServer {
  client(): Redis;
}

/** `port`: a given port (to bring a stopped server back where its clients reconnect). */
export async function startRedis(options: { port?: number } = {}): Promise<TestRedis> {
  const server = await startRedisServer(options);
  const clients: Redis[] = [];
  return {
    port: server.port,
    url: server.url,
    client() {
      const client = new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      clients.push(client);
      return client;
    },
    async stop() {
      for (const client of clients) client.disconnect();
      await server.stop();
    },
  };
}
