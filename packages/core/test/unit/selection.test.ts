import { afterEach, describe, expect, it } from 'vitest';
import {
  affinity,
  leastLag,
  type ReplicaState,
  randomChoice,
  roundRobin,
  type SelectionPolicy,
  Session,
  selectionPolicy,
} from '../../src/index.js';
import { cp } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture } from './helpers/router-fixture.js';

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

  it('is the router default', async () => {
    const f = await routerFixture({
      replicas: ['r1', 'r2', 'r3'],
      configure: (a) => {
        a.replica('r1').lagSeconds = 4;
        a.replica('r2').lagSeconds = 1;
        a.replica('r3').lagSeconds = 2;
      },
    });
    expect((await f.read(new Session())).decision.target).toBe('r2');
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
    expect(selectionPolicy('least-lag')).toBe(leastLag);
    expect(selectionPolicy('round-robin').name).toBe('round-robin');
    expect(selectionPolicy('random').name).toBe('random');
    expect(selectionPolicy('affinity').name).toBe('affinity');
    const custom: SelectionPolicy = { name: 'x', select: (c) => c[0]! };
    expect(selectionPolicy(custom)).toBe(custom);
  });
});
