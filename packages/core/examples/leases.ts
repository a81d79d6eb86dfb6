/**
 * Leases: what an integration inside a driver does instead of wrapping the user's code in a
 * callback. A query builder asks its driver for a connection, runs its statements, and gives the
 * connection back; with Tidemark the driver asks the session handle for a lease of the right kind
 * and releases it with the outcome. Runs on the in-memory adapter of the worked example; with a
 * real adapter only the `adapter` line changes.
 *
 *   pnpm --filter @tidemark/core exec tsx examples/leases.ts
 */
import { isTidemarkError, type LeaseKind, Router, type SessionHandle } from '../src/index.js';
import { createMemoryAdapter, MemoryCluster, type MemoryConnection } from './in-memory-adapter.js';

/**
 * The whole integration: `kind` comes from the driver (a SELECT outside a transaction is a
 * read, anything else a write), the rest is acquire, use, release with the outcome.
 */
export async function withLease<C, T>(
  db: SessionHandle<C>,
  kind: LeaseKind,
  work: (connection: C) => Promise<T>,
): Promise<T> {
  const lease = await db.acquire(kind, { maxHoldMs: 30_000 });
  let value: T;
  try {
    value = await work(lease.connection);
  } catch (error) {
    await lease.release(error); // rolled back (writes), nothing recorded
    throw error;
  }
  await lease.release(); // committed and recorded (writes), observed (reads)
  return value;
}

export async function runLeaseExample() {
  const cluster = new MemoryCluster(['r1', 'r2']);
  const router = new Router({ adapter: createMemoryAdapter(cluster), wait: { budgetMs: 0 } });
  await router.ready();
  try {
    const db = router.withSession(); // in a server: router.withSession(req.cookies.tm)
    await withLease(db, 'write', async (c: MemoryConnection) => c.insert('order 1'));
    // No replica has applied the order yet: the read lease goes to the primary and sees it.
    const read = await db.acquire('read');
    const rows = [...read.connection.rows];
    await read.release();
    console.log(`read after the write: ${read.target} (${read.reason}) saw`, rows);

    // A connection used after its lease ended fails loudly instead of running somewhere else.
    let misuse: string | undefined;
    try {
      void read.connection.rows;
    } catch (error) {
      misuse = isTidemarkError(error) ? error.code : String(error);
    }
    console.log('using a released connection:', misuse);

    // The next request, with the token: still read-your-writes, on a replica once one has it.
    const token = await db.token();
    cluster.replicate('r2');
    await router.monitor.refresh();
    const next = router.withSession(token);
    const again = await withLease(next, 'read', async (c) => [...c.rows]);
    const where = await next.acquire('read');
    await where.release();
    console.log(`next request: ${where.target} (${where.reason}) saw`, again);
    return { first: read.target, rows, misuse, token, next: where.target, again };
  } finally {
    await router.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runLeaseExample();
}
