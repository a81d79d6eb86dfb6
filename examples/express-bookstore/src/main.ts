// One command: embedded PostgreSQL 18 (primary + replica), a private Redis, and the API.
//   pnpm --filter @tidemark/example-express-bookstore start [--pause-replay] [--no-store] [--port 3000]
import { parseArgs } from 'node:util';
import { bookstoreApp } from './app.js';
import { startBookstore } from './bookstore.js';

const { values } = parseArgs({
  options: {
    'pause-replay': { type: 'boolean', default: false },
    'no-store': { type: 'boolean', default: false },
    port: { type: 'string', default: '3000' },
  },
});

// A paused replica reports an ever-growing lag; the demo keeps it within the health threshold so
// the router still reads from it, as it would from a replica that is a little behind.
const bookstore = await startBookstore({ maxLagSeconds: values['pause-replay'] ? 300 : 10 });
const { cluster, replica } = bookstore;
const carrier = bookstore.carrier({ store: !values['no-store'] });

if (values['pause-replay']) {
  await cluster.pauseReplay(replica.name);
  console.log(`replica replay PAUSED: without a token, reads from r1 miss new orders`);
}
const port = Number(values.port);
const server = bookstoreApp(bookstore.router, carrier).listen(port, '127.0.0.1', () => {
  console.log(
    `PostgreSQL ${cluster.version}: primary ${cluster.primary().port}, replica r1 ${replica.port}`,
  );
  console.log(
    `token store: ${values['no-store'] ? 'DISABLED (--no-store)' : bookstore.redisDescription}, token lifetime ${bookstore.lifetimeSeconds} s`,
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
  await bookstore.close();
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
