/**
 * Tokens between requests with carried reads (`carryPending`): each "request" below decodes the
 * cookie into a session, routes, and ends the way a carrier does: `settledForCarrying()` (writes
 * and the primary's reads), then encode with the replica reads carried. Runs on the in-memory
 * adapter of the worked example; with a real adapter only the `adapter` line changes.
 *
 *   pnpm --filter @tidemark/core exec tsx examples/carrying.ts
 */
import { type RouteDecision, Router, Session, TokenCodec } from '../src/index.js';
import { createMemoryAdapter, MemoryCluster, type MemoryConnection } from './in-memory-adapter.js';

export interface CarryingExampleResult {
  /** Where each of Alice's reads went, in order. */
  readonly decisions: readonly RouteDecision[];
  /** Alice's cookie after each of her requests, decoded. */
  readonly tokens: ReadonlyArray<ReturnType<TokenCodec['decode']>>;
}

export async function runCarryingExample(): Promise<CarryingExampleResult> {
  const cluster = new MemoryCluster(['r1', 'r2']);
  // Never wait: a read whose write is on no replica yet goes to the primary at once.
  const router = new Router({ adapter: createMemoryAdapter(cluster), wait: { budgetMs: 0 } });
  await router.ready();
  const codec = new TokenCodec();
  let cookie: string | undefined;
  const decisions: RouteDecision[] = [];
  const tokens: Array<ReturnType<TokenCodec['decode']>> = [];

  async function request(work: (session: Session) => Promise<void>): Promise<void> {
    const session = Session.fromToken(cookie === undefined ? undefined : codec.decode(cookie));
    await work(session);
    await session.settledForCarrying();
    cookie = codec.encode(session.toTokenData({ carryPending: true }));
    tokens.push(codec.decode(cookie));
  }
  const aliceReads = async (session: Session) => {
    const read = await router.readDetailed(session, async (c: MemoryConnection) => c.rows);
    decisions.push(read.decision);
  };

  try {
    // 1. Alice orders. The write settles before the response: writes are never carried.
    await request((session) =>
      router.write(session, async (c: MemoryConnection) => c.insert('order 1 (alice)')),
    );
    // 2. Her orders page: no replica has the order, so the primary serves it, and that read is
    //    settled now too (carried, the next request would settle it at the primary's position
    //    then, newer writes included, and stay on the primary).
    await request(aliceReads);
    // Bob orders; the replicas applied Alice's order before his.
    cluster.replicate();
    await router.write(new Session(), async (c: MemoryConnection) => c.insert('order 2 (bob)'));
    await router.monitor.refresh();
    // 3. Alice again: a replica covers her now; the read's node travels in the cookie.
    await request(aliceReads);
    // 4. And again: the same replica, which needs no probe at all.
    await request(aliceReads);
    for (const [i, token] of tokens.entries()) console.log(`cookie after request ${i + 1}:`, token);
    console.log(
      'reads served by:',
      decisions.map((d) => `${d.target} (${d.reason})`),
    );
    return { decisions, tokens };
  } finally {
    await router.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runCarryingExample();
