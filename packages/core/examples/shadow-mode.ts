/**
 * Shadow mode, before turning replica reads on: every read goes to the primary as it does today,
 * and the router predicts, per read, what routing would have done and whether a naive replica
 * router would have served it stale. Runs on the in-memory adapter of the worked example; with a
 * real adapter only the `adapter` line changes.
 *
 *   pnpm --filter @tidemark/core exec tsx examples/shadow-mode.ts
 */
import { Router, Session, type ShadowReport } from '../src/index.js';
import { createMemoryAdapter, MemoryCluster, type MemoryConnection } from './in-memory-adapter.js';

export async function runShadowExample(): Promise<ShadowReport> {
  const cluster = new MemoryCluster(['r1', 'r2']);
  const router = new Router({
    adapter: createMemoryAdapter(cluster),
    mode: 'shadow',
    wait: { budgetMs: 20 },
  });
  await router.ready();
  try {
    const alice = new Session();
    const bob = new Session();
    // Alice orders; no replica applies it: her next read would be stale on any replica.
    await router.write(alice, async (c: MemoryConnection) => c.insert('order 1 (alice)'));
    const first = await router.readDetailed(alice, async (c) => c.rows);
    // Bob has written nothing: any replica serves him.
    await router.read(bob, async (c) => c.rows);
    // A prediction runs as long as the real read would have waited (here: the whole 20 ms
    // budget, since nothing replicates meanwhile).
    console.log('prediction for the read after the write:', await first.prediction);
    // The replicas catch up; Alice's next read could go to either.
    cluster.replicate();
    await router.monitor.refresh();
    await router.read(alice, async (c) => c.rows);
    // Every read above ran on the primary and saw everything.
    console.log('first read after the write served by', first.decision.target, first.value);
    await router.shadowSettled();
    const report = router.shadowReport() as ShadowReport;
    console.log('shadow report:', report);
    return report;
  } finally {
    await router.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runShadowExample();
}
