// Run: pnpm --filter @tidemark/prometheus example          (prints one scrape, then exits)
//      pnpm --filter @tidemark/prometheus example --serve  (keeps serving /metrics on :9464)
//   With PRIMARY_URL and REPLICA_URL set (any PostgreSQL primary with one streaming replica), it
//   uses that cluster; without them it starts a throwaway local one (embedded PostgreSQL 18).
import { createServer } from 'node:http';
import { Router, Session } from '@tidemark/core';
import { createPgAdapter } from '@tidemark/pg';
import { prometheusHandler } from '@tidemark/prometheus';
import { type Cluster, startCluster } from '@tidemark/test-clusters';

let cluster: Cluster | undefined;
let primary = process.env['PRIMARY_URL'];
let replica = process.env['REPLICA_URL'];
if (primary === undefined || replica === undefined) {
  console.error('starting a local PostgreSQL 18 primary and replica...');
  cluster = await startCluster('pg18', { replicas: 1 });
  primary = cluster.primary().url;
  replica = cluster.replicas()[0]!.url;
}

const router = new Router({
  adapter: createPgAdapter({ primary, replicas: { r1: replica } }),
  cluster: 'main',
});
await router.ready();

// Some traffic, so the counters have something to say.
await router.write(new Session(), (db) => db.query('CREATE TABLE IF NOT EXISTS notes (body text)'));
for (let i = 0; i < 3; i++) {
  const session = new Session();
  await router.write(session, (db) => db.query('INSERT INTO notes VALUES ($1)', [`note ${i}`]));
  await router.read(session, (db) => db.query('SELECT count(*) FROM notes'));
}

// The endpoint: a plain Node handler (Express accepts it as is: app.get('/metrics', handler)).
const server = createServer(prometheusHandler(router));
await new Promise<void>((resolve) => server.listen(9464, '127.0.0.1', resolve));
console.error('serving http://127.0.0.1:9464/metrics');

if (process.argv.includes('--serve')) {
  process.on('SIGINT', () => {
    server.close();
    void router.close().then(() => cluster?.teardown());
  });
} else {
  const response = await fetch('http://127.0.0.1:9464/metrics');
  console.log(`Content-Type: ${response.headers.get('content-type')}\n`);
  console.log(await response.text());
  server.close();
  await router.close();
  await cluster?.teardown();
}
