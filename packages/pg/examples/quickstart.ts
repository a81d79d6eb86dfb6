// Run: PRIMARY_URL=postgres://... REPLICA_URL=postgres://... npx tsx examples/quickstart.ts
// (after `pnpm --filter @tidemark/pg build`; any primary with one streaming replica works)
import { Router, Session, TokenCodec } from '@tidemark/core';
import { createPgAdapter } from '@tidemark/pg';

const adapter = createPgAdapter({
  primary: process.env['PRIMARY_URL'] ?? 'postgres://postgres@127.0.0.1:5433/postgres',
  replicas: { r1: process.env['REPLICA_URL'] ?? 'postgres://postgres@127.0.0.1:5434/postgres' },
});
const router = new Router({ adapter, cluster: 'main' });
const tokens = new TokenCodec();
await router.ready();

// Request 1: a write. The position is captured after COMMIT, in the same round trip.
const session = new Session();
await router.write(session, async (db) => {
  await db.query('CREATE TABLE IF NOT EXISTS notes (id serial PRIMARY KEY, body text)');
  await db.query('INSERT INTO notes (body) VALUES ($1)', ['hello']);
});
await session.settled(); // what the session's reads saw, settled by one shared probe
const token = tokens.encode(session.toTokenData()); // put it in a cookie or a header

// Request 2, possibly on another server: the read sees the write, from a replica when one has it.
const next = Session.fromToken(tokens.decode(token));
const { value, decision } = await router.readDetailed(next, async (db) => {
  const { rows } = await db.query('SELECT count(*)::int AS notes FROM notes');
  return rows[0].notes as number;
});
console.log(`${value} notes, read on ${decision.target} (${decision.reason})`);
console.log('token:', token);

await router.close();
