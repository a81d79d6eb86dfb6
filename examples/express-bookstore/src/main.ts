// One command: embedded PostgreSQL 18 (primary + replica), a private Redis, and the API.
//   pnpm --filter @tidemark/example-express-bookstore start [--pause-replay] [--no-store] [--port 3000]
import { parseArgs } from 'node:util';
import { Router, TokenCodec } from '@tidemark/core';
import { TokenCarrier, tokenLifetimeSeconds } from '@tidemark/http';
import { createPgAdapter } from '@tidemark/pg';
import { RedisTokenStore } from '@tidemark/redis';
import { bookstoreApp } from './app.js';
import { startDatabase, startRedis } from './infrastructure.js';

const { values } = parseArgs({
  options: {
    'pause-replay': { type: 'boolean', default: false },
    'no-store': { type: 'boolean', default: false },
    port: { type: 'string', default: '3000' },
  },
});

// A paused replica reports an ever-growing lag; the demo keeps it within the health threshold so
// the router still reads from it, as it would from a replica that is a little behind.
const health = { maxLagSeconds: values['pause-replay'] ? 300 : 10, maxSampleAgeMs: 1000 };
const lifetime = tokenLifetimeSeconds(health);
// Redis first: it starts in milliseconds, and a failure then leaves no database behind.
const { redis, description: redisDescription, stop: stopRedis } = await startRedis();
const cluster = await startDatabase().catch((error: unknown) => {
  stopRedis();
  throw error;
});
const replica = cluster.replicas()[0];
if (!replica) throw new Error('the harness started no replica');

const adapter = createPgAdapter({ primary: cluster.primary().url, replicas: { r1: replica.url } });
const router = new Router({ adapter, cluster: 'bookstore', health, wait: { budgetMs: 100 } });
await router.ready();
// A real deployment loads secrets from its secret store; new keys go first, retired ones stay
// until their tokens expired (`lifetime` seconds).
const secret = process.env['TIDEMARK_SECRET'] ?? 'demo-only-secret-demo-only-secret!';
const codec = new TokenCodec({ keys: [{ id: 'demo1', secret }], maxAgeSeconds: lifetime });
const store = new RedisTokenStore({
  redis,
  codecs: { bookstore: adapter.codec },
  ttlSeconds: lifetime,
});
const carrier = new TokenCarrier({
  codec,
  lifetimeSeconds: lifetime,
  ...(values['no-store'] ? {} : { store }),
});

if (values['pause-replay']) {
  await cluster.pauseReplay(replica.name);
  console.log(`replica replay PAUSED: without a token, reads from r1 miss new orders`);
}
const port = Number(values.port);
const server = bookstoreApp(router, carrier).listen(port, '127.0.0.1', () => {
  console.log(
    `PostgreSQL ${cluster.version}: primary ${cluster.primary().port}, replica r1 ${replica.port}`,
  );
  console.log(
    `token store: ${values['no-store'] ? 'DISABLED (--no-store)' : redisDescription}, token lifetime ${lifetime} s`,
  );
  console.log(`Bookstore API on http://127.0.0.1:${port}  (Ctrl-C stops everything)`);
  console.log(
    `  curl -si -X POST -H 'x-user: ada' -H 'content-type: application/json' -d '{"title":"Dune"}' http://127.0.0.1:${port}/orders`,
  );
  console.log(`  curl -s -H 'x-user: ada' http://127.0.0.1:${port}/my/orders`);
});

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  server.close();
  await router.close().catch(() => undefined);
  stopRedis();
  await cluster.teardown();
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
