import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryAdapter, MemoryCluster } from '../../examples/in-memory-adapter.js';
import { Router, Session } from '../../src/index.js';

/** The core README's worked example, run: a router over the in-memory adapter. */
const routers: Router<number, unknown>[] = [];
afterEach(async () => {
  await Promise.all(routers.splice(0).map((r) => r.close()));
});

async function setup() {
  const cluster = new MemoryCluster(['r1', 'r2']);
  const router = new Router({
    adapter: createMemoryAdapter(cluster) as never,
    wait: { budgetMs: 0 },
  }) as Router<number, unknown>;
  routers.push(router);
  await router.ready();
  return { cluster, router };
}

describe('the in-memory adapter (worked example)', () => {
  it('read-your-writes while replicas lag; a naive replica read misses the write', async () => {
    const { cluster, router } = await setup();
    const session = new Session();
    await router.write(session, async (c) => (c as { insert(r: string): void }).insert('order 1'));
    // Neither replica has applied it: the router sends the read to the primary.
    const read = await router.readDetailed(session, async (c) => (c as { rows: string[] }).rows);
    expect(read.value).toEqual(['order 1']);
    expect(read.decision.target).toBe('primary');
    // Control: what a replica shows right now.
    expect(cluster.log.slice(0, cluster.applied.get('r1'))).toEqual([]);
    // Once a replica applies it, the read goes there.
    cluster.replicate('r2');
    await router.monitor.refresh();
    const again = await router.readDetailed(session, async (c) => (c as { rows: string[] }).rows);
    expect(again.decision.target).toBe('r2');
    expect(again.value).toEqual(['order 1']);
  });

  it('reads are read-only, unknown replicas and a closed adapter are typed errors', async () => {
    const cluster = new MemoryCluster(['r1']);
    const adapter = createMemoryAdapter(cluster);
    await expect(adapter.read('r1', async (c) => c.insert('x'), { observe: true })).rejects.toThrow(
      /read-only/,
    );
    await expect(
      adapter.probe('r9', { signal: new AbortController().signal, primary: undefined }),
    ).rejects.toMatchObject({
      code: 'TIDEMARK_CONFIG',
    });
    await adapter.close();
    await expect(
      adapter.probePrimary({ signal: new AbortController().signal }),
    ).rejects.toMatchObject({
      code: 'TIDEMARK_CLOSED',
    });
    expect(() => adapter.codec.decode('01')).toThrow(
      expect.objectContaining({ code: 'TIDEMARK_POSITION_INVALID' }),
    );
  });
});

describe('the shadow mode example', () => {
  it('reads on the primary; predicts one primary fallback, two replica reads, one naive miss', async () => {
    const { runShadowExample } = await import('../../examples/shadow-mode.js');
    const report = await runShadowExample();
    expect(report.reads).toBe(3);
    // Alice right after her write: no replica applies it within the 20 ms budget.
    expect(report.byOutcome.primary_fallback).toBe(1);
    expect(report.byOutcome.replica).toBe(2);
    expect(report.naiveChecked).toBe(2);
    expect(report.naiveStale).toBe(1);
    expect(report.pending).toBe(0);
  });
});

describe('the lease example', () => {
  it('a write lease then a read lease: primary first, a replica once it has the write', async () => {
    const { runLeaseExample } = await import('../../examples/leases.js');
    const result = await runLeaseExample();
    expect(result.first).toBe('primary');
    expect(result.rows).toEqual(['order 1']);
    expect(result.misuse).toBe('TIDEMARK_LEASE_RELEASED');
    expect(result.token).toMatch(/^tm1/);
    expect(result.next).toBe('r2');
    expect(result.again).toEqual(['order 1']);
  });
});

describe('the carrying example', () => {
  it('settles writes and primary reads, carries replica reads, and the next read stays put', async () => {
    const { runCarryingExample } = await import('../../examples/carrying.js');
    const { decisions, tokens } = await runCarryingExample();
    expect(decisions.map((d) => d.target)).toEqual([
      'primary',
      expect.stringMatching(/^r[12]$/),
      decisions[1]?.target,
    ]);
    expect(decisions[2]?.reason).toBe('replica-covered');
    // After the write and after the primary read: settled positions, nothing carried.
    expect(tokens[0]).toMatchObject({ positions: { default: '1' } });
    expect(tokens[1]?.pending).toBeUndefined();
    expect(tokens[1]).toMatchObject({ positions: { default: '1' } });
    // After a replica read: its node travels in the token.
    expect(tokens[2]?.pending).toEqual({ default: [decisions[1]?.target] });
  });
});
