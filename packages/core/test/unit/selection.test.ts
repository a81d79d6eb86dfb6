import { afterEach, describe, expect, it } from 'vitest';
import {
  affinity,
  balanced,
  leastLag,
  type ReplicaState,
  randomChoice,
  roundRobin,
  type SelectionPolicy,
  Session,
  selectionPolicy,
} from '../../src/index.js';
import { cp } from '../support/scripted-adapter.js';
import { settle } from './helpers/fake-clock.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

function replica(id: string, lagSeconds?: number): ReplicaState<unknown> {
  return {
    id,
    reachable: true,
    applied: cp('1.10'),
    lagSeconds,
    lagBytes: undefined,
    paused: false,
    history: 'current',
    behindPrimarySince: undefined,
    sampledAt: 0,
    failures: 0,
    lastError: undefined,
  };
}

const ids = (states: ReadonlyArray<ReplicaState<unknown>>) => states.map((s) => s.id);

describe('least-lag', () => {
  it('picks the lowest lag; replicas without a lag figure rank last; ties keep order', () => {
    expect(leastLag.select([replica('a', 3), replica('b', 1), replica('c', 2)], undefined).id).toBe(
      'b',
    );
    expect(leastLag.select([replica('a'), replica('b', 30)], undefined).id).toBe('b');
    expect(leastLag.select([replica('a', 1), replica('b', 1)], undefined).id).toBe('a');
    expect(leastLag.select([replica('a'), replica('b')], undefined).id).toBe('a');
  });

  it("routes router reads when named 'least-lag'", async () => {
    const f = await routerFixture({
      replicas: ['r1', 'r2', 'r3'],
      router: { selection: 'least-lag' },
      configure: (a) => {
        a.replica('r1').lagSeconds = 4;
        a.replica('r2').lagSeconds = 1;
        a.replica('r3').lagSeconds = 2;
      },
    });
    expect((await f.read(new Session())).decision.target).toBe('r2');
  });
});

/** Deterministic uniform numbers (mulberry32), so share bounds cannot flake. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function loads(inFlight: Record<string, number>) {
  return { inFlight: (id: string) => inFlight[id] ?? 0 };
}

function shareOf(picks: readonly string[], id: string): number {
  return picks.filter((p) => p === id).length / picks.length;
}

describe('balanced (power of two choices on in-flight reads)', () => {
  it('two caught-up replicas with equal load each get 40-60% of the picks', () => {
    for (const seed of [1, 2, 3]) {
      const policy = balanced({ random: seeded(seed) });
      const candidates = [replica('a', 0), replica('b', 0)];
      const picks = Array.from(
        { length: 2000 },
        () => policy.select(candidates, undefined, loads({})).id,
      );
      expect(shareOf(picks, 'a')).toBeGreaterThan(0.4);
      expect(shareOf(picks, 'a')).toBeLessThan(0.6);
    }
  });

  it('the replica with fewer reads in flight wins, whatever the lag', () => {
    const policy = balanced({ random: seeded(7) });
    const candidates = [replica('a', 0), replica('b', 5)];
    for (let i = 0; i < 50; i++) {
      expect(policy.select(candidates, undefined, loads({ a: 3, b: 2 })).id).toBe('b');
      expect(policy.select(candidates, undefined, loads({ a: 0, b: 1 })).id).toBe('a');
    }
  });

  it('never picks the most loaded of three when the others have fewer in flight', () => {
    const policy = balanced({ random: seeded(11) });
    const candidates = [replica('a'), replica('b'), replica('c')];
    const picks = Array.from(
      { length: 600 },
      () => policy.select(candidates, undefined, loads({ a: 5, b: 1, c: 1 })).id,
    );
    expect(picks).not.toContain('a');
    expect(shareOf(picks, 'b')).toBeGreaterThan(0.35);
    expect(shareOf(picks, 'c')).toBeGreaterThan(0.35);
  });

  it('at equal load, clearly less lag wins; differences within the tolerance are a tie', () => {
    const policy = balanced({ random: seeded(5) });
    const lagging = [replica('a', 2), replica('b', 0)];
    for (let i = 0; i < 50; i++) expect(policy.select(lagging, undefined).id).toBe('b');
    const noLag = [replica('a'), replica('b', 3)];
    for (let i = 0; i < 50; i++) expect(policy.select(noLag, undefined).id).toBe('b');
    const close = [replica('a', 0.05), replica('b', 0)];
    const picks = Array.from({ length: 1000 }, () => policy.select(close, undefined).id);
    expect(shareOf(picks, 'a')).toBeGreaterThan(0.4);
    expect(shareOf(picks, 'a')).toBeLessThan(0.6);
  });

  it('at equal load and lag, a clearly smaller share of recent reads wins; close shares are a tie', () => {
    const policy = balanced({ random: seeded(9) });
    const candidates = [replica('a', 0), replica('b', 0)];
    const shares = (a: number | undefined, b: number | undefined) => ({
      inFlight: () => 0,
      recentShare: (id: string) => (id === 'a' ? a : b),
    });
    for (let i = 0; i < 50; i++) {
      expect(policy.select(candidates, undefined, shares(0.6, 0.4)).id).toBe('b');
      expect(policy.select(candidates, undefined, shares(0.3, 0.7)).id).toBe('a');
    }
    // In flight and lag still come first.
    const busy = { ...shares(0.1, 0.9), inFlight: (id: string) => (id === 'a' ? 2 : 0) };
    expect(policy.select(candidates, undefined, busy).id).toBe('b');
    const lagging = [replica('a', 2), replica('b', 0)];
    expect(policy.select(lagging, undefined, shares(0.1, 0.9)).id).toBe('b');
    for (const [a, b] of [
      [0.505, 0.495],
      [undefined, 0.9],
    ] as const) {
      const picks = Array.from(
        { length: 1000 },
        () => policy.select(candidates, undefined, shares(a, b)).id,
      );
      expect(shareOf(picks, 'a')).toBeGreaterThan(0.4);
      expect(shareOf(picks, 'a')).toBeLessThan(0.6);
    }
  });

  it('one candidate is returned without drawing; a generator returning 1 stays in range', () => {
    let draws = 0;
    const counting = balanced({
      random: () => {
        draws++;
        return 0.5;
      },
    });
    expect(counting.select([replica('a')], undefined).id).toBe('a');
    expect(draws).toBe(0);
    const edge = balanced({ random: () => 0.9999999999 });
    const three = [replica('a'), replica('b'), replica('c')];
    expect(three.map((r) => r.id)).toContain(edge.select(three, undefined).id);
    const one = balanced({ random: () => 1 });
    expect(three.map((r) => r.id)).toContain(one.select(three, undefined).id);
  });

  it('is the router default: two caught-up replicas each serve 40-60% of sequential reads', async () => {
    const f = await routerFixture({ defaultSelection: true });
    for (let i = 0; i < 400; i++) await f.read(new Session());
    for (const id of ['r1', 'r2']) {
      const share = f.adapter.readCount(id) / 400;
      expect(share).toBeGreaterThan(0.4);
      expect(share).toBeLessThan(0.6);
    }
  });

  it('the router counts reads in flight: a replica holding slow reads gets the next ones less', async () => {
    const f = await routerFixture({ defaultSelection: true });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    // Every read on r1 hangs until the gate opens; reads on r2 answer at once.
    const fn = async (connection: { target: string }) => {
      if (connection.target === 'r1') await gate;
      return connection.target;
    };
    const pending: Array<Promise<unknown>> = [];
    for (let i = 0; i < 40; i++) {
      pending.push(f.router.read(new Session(), fn));
      await settle();
    }
    // At most one read got stuck on r1 before its in-flight count made r2 the better choice.
    expect(f.adapter.readCount('r1')).toBe(1);
    expect(f.adapter.readCount('r2')).toBe(39);
    open();
    await Promise.all(pending);
  });

  it('with concurrent reads of equal duration, two replicas each serve 40-60%', async () => {
    const f = await routerFixture({ defaultSelection: true });
    const fn = async (connection: { target: string }) => {
      await f.clock.sleep(1);
      return connection.target;
    };
    const reads = Array.from({ length: 16 }, async () => {
      for (let i = 0; i < 25; i++) await f.router.read(new Session(), fn);
    });
    await f.clock.run(Promise.all(reads));
    for (const id of ['r1', 'r2']) {
      const share = f.adapter.readCount(id) / 400;
      expect(share).toBeGreaterThan(0.4);
      expect(share).toBeLessThan(0.6);
    }
  });
});

describe('balanced: reads that had to wait spread too', () => {
  /** Replicas one write behind the session, both applying it `catchUpMs` later. */
  async function waitedReads(serverSideWait: boolean, reads: number): Promise<string[]> {
    const f = await routerFixture({ defaultSelection: true, adapter: { serverSideWait } });
    const targets: string[] = [];
    for (let i = 0; i < reads; i++) {
      const seq = 20 + i;
      f.adapter.primary.position = cp(`1.${seq}`);
      f.adapter.setAll({ applied: cp(`1.${seq - 1}`) });
      f.clock.at(3, () => f.adapter.setAll({ applied: cp(`1.${seq}`) }));
      const { decision } = await f.read(sessionAt(`1.${seq}`));
      expect(decision.reason).toBe('replica-waited');
      targets.push(decision.target);
    }
    return targets;
  }

  it('polling: when both replicas catch up in the same round, each serves 40-60%', async () => {
    const targets = await waitedReads(false, 200);
    expect(shareOf(targets, 'r1')).toBeGreaterThan(0.4);
    expect(shareOf(targets, 'r1')).toBeLessThan(0.6);
  });

  it('server-side: waits on the least lagged replica, ties in configuration order (never at random)', async () => {
    // A replica whose replay stopped after its last sample looks as caught up as the others:
    // a random pick would hand it the whole wait budget (conformance bounded-wait on mongo-sim).
    const targets = await waitedReads(true, 50);
    expect(new Set(targets)).toEqual(new Set(['r1']));
  });
});

describe('round-robin', () => {
  it('spreads selections evenly over the candidates', () => {
    const policy = roundRobin();
    const candidates = [replica('a'), replica('b'), replica('c')];
    const counts = new Map<string, number>();
    let previous = '';
    for (let i = 0; i < 300; i++) {
      const id = policy.select(candidates, undefined).id;
      expect(id).not.toBe(previous);
      previous = id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).toEqual({ a: 100, b: 100, c: 100 });
  });

  it("selection 'round-robin' spreads router reads evenly", async () => {
    const f = await routerFixture({
      replicas: ['r1', 'r2', 'r3'],
      router: { selection: 'round-robin' },
    });
    for (let i = 0; i < 30; i++) await f.read(new Session());
    expect(['r1', 'r2', 'r3'].map((id) => f.adapter.readCount(id))).toEqual([10, 10, 10]);
  });
});

describe('random', () => {
  it('maps the injected random number onto the candidates', () => {
    const values = [0, 0.34, 0.99, 0.5, 0.999999];
    const policy = randomChoice(() => values.shift() ?? 0);
    const candidates = [replica('a'), replica('b'), replica('c')];
    const picks = Array.from({ length: 5 }, () => policy.select(candidates, undefined).id);
    expect(picks).toEqual(['a', 'b', 'c', 'b', 'c']);
  });

  it('stays in range even if the generator returns exactly 1', () => {
    const policy = randomChoice(() => 1);
    expect(policy.select([replica('a'), replica('b')], undefined).id).toBe('a');
  });

  it('routes router reads with the injected generator', async () => {
    const values = [0.9, 0.1, 0.6];
    const f = await routerFixture({
      replicas: ['r1', 'r2', 'r3'],
      router: { selection: randomChoice(() => values.shift() ?? 0) },
    });
    for (let i = 0; i < 3; i++) await f.read(new Session());
    expect(f.adapter.readTargets()).toEqual(['r3', 'r1', 'r2']);
  });
});

describe('affinity (rendezvous hashing)', () => {
  const all = [replica('a'), replica('b'), replica('c'), replica('d')];
  const keys = Array.from({ length: 2000 }, (_, i) => `user-${i}`);

  it('sends the same key to the same replica, whatever the candidate order', () => {
    const policy = affinity();
    const reversed = [...all].reverse();
    for (const key of keys.slice(0, 200)) {
      const first = policy.select(all, key).id;
      expect(policy.select(all, key).id).toBe(first);
      expect(policy.select(reversed, key).id).toBe(first);
    }
  });

  // Regression: FNV-1a without a finaliser correlates the scores of ids that differ only in
  // their last character, so with r1..r4 one replica gets about half of all keys.
  it('spreads keys evenly over replicas named r1..r4', () => {
    const policy = affinity();
    const replicas = [replica('r1'), replica('r2'), replica('r3'), replica('r4')];
    const counts = new Map<string, number>();
    for (const key of keys) {
      const id = policy.select(replicas, key).id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    const shares = ['r1', 'r2', 'r3', 'r4'].map((id) => (counts.get(id) ?? 0) / keys.length);
    for (const share of shares) {
      expect(share).toBeGreaterThan(0.2);
      expect(share).toBeLessThan(0.3);
    }
  });

  it('removing one replica moves only the keys that were on it', () => {
    const policy = affinity();
    const without = all.filter((s) => s.id !== 'b');
    let moved = 0;
    for (const key of keys) {
      const before = policy.select(all, key).id;
      const after = policy.select(without, key).id;
      if (before === 'b') {
        moved++;
        expect(after).not.toBe('b');
      } else {
        expect(after).toBe(before);
      }
    }
    expect(moved).toBeGreaterThan(0);
  });

  it('without a key, uses the fallback policy', () => {
    const fallback: SelectionPolicy = { name: 'last', select: (c) => c[c.length - 1]! };
    expect(affinity(fallback).select(all, undefined).id).toBe('d');
    expect(affinity().select([replica('a', 5), replica('b', 1)], undefined).id).toBe('b');
  });

  it('router reads with an affinityKey stick to one replica', async () => {
    const f = await routerFixture({
      replicas: ['r1', 'r2', 'r3'],
      router: { selection: 'affinity' },
    });
    const expected = affinity().select(f.router.monitor.states(), 'user-42').id;
    for (let i = 0; i < 10; i++) await f.read(new Session(), { affinityKey: 'user-42' });
    expect(new Set(f.adapter.readTargets())).toEqual(new Set([expected]));
  });
});

describe('custom policy object', () => {
  it('receives only the healthy covering candidates and the affinity key; its pick is used', async () => {
    const seen: Array<{ candidates: string[]; key: string | undefined }> = [];
    const policy: SelectionPolicy = {
      name: 'custom',
      select(candidates, key) {
        seen.push({ candidates: ids(candidates), key });
        return candidates[candidates.length - 1]!;
      },
    };
    const f = await routerFixture({
      replicas: ['r1', 'r2', 'r3', 'r4'],
      router: { selection: policy },
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.replica('r1').applied = cp('1.12');
        a.replica('r2').applied = cp('1.12');
        a.replica('r3').applied = cp('1.12');
        a.replica('r3').reachable = false;
      },
    });
    const session = new Session();
    session.raise('default', f.adapter.codec, cp('1.12'));
    const { decision } = await f.read(session, { affinityKey: 'k' });
    expect(seen).toEqual([{ candidates: ['r1', 'r2'], key: 'k' }]);
    expect(decision.target).toBe('r2');
  });

  it('selectionPolicy resolves names and passes objects through', () => {
    expect(selectionPolicy('balanced').name).toBe('balanced');
    expect(selectionPolicy('least-lag')).toBe(leastLag);
    expect(selectionPolicy('round-robin').name).toBe('round-robin');
    expect(selectionPolicy('random').name).toBe('random');
    expect(selectionPolicy('affinity').name).toBe('affinity');
    const custom: SelectionPolicy = { name: 'x', select: (c) => c[0]! };
    expect(selectionPolicy(custom)).toBe(custom);
  });
});
