import { describe, expect, it } from 'vitest';
import { PRIMARY } from '../../src/adapter.js';
import {
  CheckFailed,
  decide,
  enforceable,
  type ResolvedToken,
  type Route,
  type Rungs,
} from '../../src/decide.js';
import type { ReplicaState } from '../../src/monitor/types.js';
import type { ReadPlan } from '../../src/plan.js';

/** Positions are numbers here; each rung records that it ran. */
function replica(id: string, applied: number): ReplicaState<number> {
  return {
    id,
    reachable: true,
    applied,
    paused: false,
    sampledAt: 0,
    failures: 0,
    history: 'current',
  } as unknown as ReplicaState<number>;
}

function rungs(overrides: Partial<Rungs<number>> & { planKind?: ReadPlan<number>['kind'] } = {}) {
  const calls: string[] = [];
  const kind = overrides.planKind ?? 'wait';
  const base: Rungs<number> = {
    plan: (required, exclude) => {
      calls.push(`plan:${required ?? '-'}:${exclude ?? '-'}`);
      if (kind === 'replica')
        return { kind, replica: replica('r1', 9), covered: required !== undefined };
      if (kind === 'wait') return { kind, candidates: [replica('r1', 1)] };
      return { kind: 'none', otherHistory: false, anyHealthy: true };
    },
    lostByVerdict: () => {
      calls.push('lostByVerdict');
      return false;
    },
    checkAgainstPrimary: async () => {
      calls.push('check');
      return 'ok';
    },
    wait: async () => {
      calls.push('wait');
      return undefined;
    },
    fallback: async (reason, _required, exclude): Promise<Route> => {
      calls.push(`fallback:${reason}:${exclude ?? '-'}`);
      return { target: PRIMARY, reason, stale: false };
    },
    otherHistory: () => {
      calls.push('otherHistory');
      return { target: PRIMARY, reason: 'primary-other-history', stale: false };
    },
    historyUnverified: () => {
      calls.push('historyUnverified');
      return {
        target: PRIMARY,
        reason: 'primary-history-unverified',
        stale: false,
        keepSession: true,
      };
    },
    impossible: () => {
      calls.push('impossible');
    },
    primaryFailed: () => {
      throw new Error('primary failed');
    },
  };
  return { rungs: { ...base, ...overrides }, calls };
}

const at = (position: number): ResolvedToken<number> => ({ kind: 'position', position });

describe('decide: the routing ladder', () => {
  it('a covered replica serves at once; the reason follows the token', async () => {
    for (const [token, reason] of [
      [at(5), 'replica-covered'],
      [{ kind: 'none' }, 'no-token'],
      [{ kind: 'ignored' }, 'bad-token-ignored'],
    ] as const) {
      const { rungs: r, calls } = rungs({ planKind: 'replica' });
      const decided = await decide(r, token);
      expect(decided.route).toMatchObject({ target: 'r1', reason, stale: false });
      expect(calls).not.toContain('check');
    }
  });

  it('behind replicas: history check before the wait, then the primary under the cap', async () => {
    const { rungs: r, calls } = rungs();
    const decided = await decide(r, at(5));
    expect(calls).toEqual([
      'lostByVerdict',
      'plan:5:-',
      'check',
      'wait',
      'fallback:primary-fallback:-',
    ]);
    expect(enforceable(decided)).toBe(5);
  });

  it('a wait that succeeds ends the ladder on that replica', async () => {
    const { rungs: r } = rungs({ wait: async () => 'r1' });
    expect((await decide(r, at(5))).route).toMatchObject({
      target: 'r1',
      reason: 'replica-waited',
    });
  });

  it('no wait budget: straight from the check to the primary', async () => {
    const { rungs: r, calls } = rungs({ wait: undefined });
    await decide(r, at(5));
    expect(calls).not.toContain('wait');
    expect(calls.at(-1)).toBe('fallback:primary-fallback:-');
  });

  it('fails closed: a check that could not answer never reaches the primary as fresh', async () => {
    const { rungs: r, calls } = rungs({
      checkAgainstPrimary: async () => new CheckFailed(new Error('x')),
    });
    const decided = await decide(r, at(5));
    expect(calls).toContain('wait');
    expect(calls.at(-1)).toBe('historyUnverified');
    expect(decided.route.reason).toBe('primary-history-unverified');
    expect(enforceable(decided)).toBeUndefined();
  });

  it('another history goes to its policy, never waited on', async () => {
    const { rungs: r, calls } = rungs({ checkAgainstPrimary: async () => 'other-history' });
    await decide(r, at(5));
    expect(calls).not.toContain('wait');
    expect(calls.at(-1)).toBe('otherHistory');
  });

  it('a position the adapter already knows is lost never reaches the plan', async () => {
    const { rungs: r, calls } = rungs({ lostByVerdict: () => true });
    await decide(r, at(5));
    expect(calls).toEqual(['otherHistory']);
  });

  it('an impossible position: bad-token policy, then the ladder again without it', async () => {
    const { rungs: r, calls } = rungs({ checkAgainstPrimary: async () => 'impossible' });
    const decided = await decide(r, at(5));
    expect(calls).toEqual([
      'lostByVerdict',
      'plan:5:-',
      'impossible',
      'plan:-:-',
      'fallback:primary-no-replica:-',
    ]);
    expect(decided.token.kind).toBe('ignored');
    expect(enforceable(decided)).toBeUndefined();
  });

  it('an impossible position under reject: the policy throws and nothing else runs', async () => {
    const { rungs: r } = rungs({
      checkAgainstPrimary: async () => 'impossible',
      impossible: () => {
        throw new Error('rejected');
      },
    });
    await expect(decide(r, at(5))).rejects.toThrow('rejected');
  });

  it('no healthy replica: primary-no-replica', async () => {
    const { rungs: r, calls } = rungs({
      planKind: 'none',
      plan: () => ({ kind: 'none', otherHistory: false, anyHealthy: false }),
    });
    await decide(r, at(5));
    expect(calls.at(-1)).toBe('fallback:primary-no-replica:-');
  });

  it('a retry is the same ladder without the failed target, the check and the wait', async () => {
    const { rungs: r, calls } = rungs();
    await decide(r, at(5), 'r1');
    expect(calls).toEqual(['plan:5:r1', 'fallback:primary-fallback:r1']);
  });

  it('a retry after the primary failed has only covered replicas left', async () => {
    const { rungs: r } = rungs();
    await expect(decide(r, at(5), PRIMARY)).rejects.toThrow('primary failed');
    const covered = rungs({ planKind: 'replica' });
    expect((await decide(covered.rungs, at(5), PRIMARY)).route.target).toBe('r1');
  });

  it('a degraded stale route enforces no position', async () => {
    const { rungs: r } = rungs({
      fallback: async () => ({ target: 'r1', reason: 'degraded-stale', stale: true }),
    });
    expect(enforceable(await decide(r, at(5)))).toBeUndefined();
  });
});
