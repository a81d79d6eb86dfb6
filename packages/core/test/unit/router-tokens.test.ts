import { afterEach, describe, expect, it } from 'vitest';
import {
  ErrorCode,
  HistoryUnverifiedError,
  OtherHistoryError,
  Session,
  TokenError,
} from '../../src/index.js';
import { counterCodec } from '../support/counter-codec.js';
import { cp, cpText, ScriptedConnectionError } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

describe('malformed session position', () => {
  it("badToken 'reject' (default): throws the TokenError, counts it, reads nothing", async () => {
    const f = await routerFixture();
    const error = await f.read(sessionAt('not-a-position')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenError);
    expect((error as TokenError).code).toBe(ErrorCode.PositionInvalid);
    expect(f.adapter.readTargets()).toEqual([]);
    expect(f.router.metrics().badTokens).toBe(1);
    expect(f.events.badToken).toEqual([{ cluster: 'default', error }]);
  });

  it("badToken 'ignore': reads as if there were no token (bad-token-ignored) and forgets it", async () => {
    const f = await routerFixture({ router: { badToken: 'ignore' } });
    const session = Session.fromToken({
      positions: { default: 'garbage', other: '7.7' },
      issuedAt: 0,
    });
    const { decision } = await f.read(session);
    expect(decision.reason).toBe('bad-token-ignored');
    expect(decision.target).not.toBe('primary');
    expect(f.router.metrics().badTokens).toBe(1);
    expect(f.router.metrics().byReason['bad-token-ignored']).toBe(1);
    expect(f.events.badToken).toHaveLength(1);
    // The bad position is gone (replaced by what the read observed); other clusters are kept.
    expect(session.positionText('default')).toBe('1.10');
    expect(session.positionText('other')).toBe('7.7');
    // Forgotten, so it is not counted again.
    expect((await f.read(session)).decision.reason).toBe('replica-covered');
    expect(f.router.metrics().badTokens).toBe(1);
  });

  it("badToken 'ignore' with no healthy replica reads the primary as a token-less read", async () => {
    const f = await routerFixture({
      router: { badToken: 'ignore' },
      configure: (a) => a.setAll({ reachable: false }),
    });
    const { decision } = await f.read(sessionAt('%%%'));
    expect(decision.target).toBe('primary');
    expect(decision.reason).toBe('primary-no-replica');
    expect(f.router.metrics().badTokens).toBe(1);
  });
});

describe('impossible position (ahead of the primary)', () => {
  it("'reject': throws TIDEMARK_TOKEN_IMPOSSIBLE after a fresh primary probe confirms it", async () => {
    const f = await routerFixture();
    const primaryProbes = f.adapter.probeCount('primary');
    const error = await f.read(sessionAt('1.50')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenError);
    expect((error as TokenError).code).toBe('TIDEMARK_TOKEN_IMPOSSIBLE');
    expect((error as TokenError).retryable).toBe(false);
    expect(f.adapter.probeCount('primary')).toBe(primaryProbes + 1);
    // Detected before any wait was spent on it.
    expect(f.adapter.calls.waits).toEqual([]);
    expect(f.adapter.readTargets()).toEqual([]);
    expect(f.router.metrics().badTokens).toBe(1);
    expect(f.events.badToken.map((e) => e.error.code)).toEqual(['TIDEMARK_TOKEN_IMPOSSIBLE']);
  });

  it("'ignore': reads as bad-token-ignored and the session forgets the forged position", async () => {
    const f = await routerFixture({ router: { badToken: 'ignore' } });
    const session = sessionAt('1.50');
    const { decision } = await f.read(session);
    expect(decision.reason).toBe('bad-token-ignored');
    expect(decision.target).not.toBe('primary');
    expect(f.adapter.calls.waits).toEqual([]);
    expect(session.positionText('default')).toBe('1.10');
    expect(f.router.metrics().badTokens).toBe(1);
  });

  it('an adapter classifier decides between impossible and other-history', async () => {
    const seen: string[] = [];
    const f = await routerFixture({
      configure: (adapter) =>
        Object.assign(adapter, {
          classifyAgainstPrimary: (primary: { seq: number }, required: { seq: number }) => {
            seen.push(`${primary.seq}<${required.seq}`);
            return 'other-history' as const;
          },
        }),
    });
    const error = await f.read(sessionAt('1.50')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OtherHistoryError);
    expect(seen).toEqual(['10<50']);
    expect(f.router.metrics().otherHistory).toBe(1);
    expect(f.router.metrics().badTokens).toBe(0);
  });

  it('an asynchronous classifier is awaited (other-history after a look at the primary)', async () => {
    const f = await routerFixture({
      configure: (adapter) =>
        Object.assign(adapter, {
          classifyAgainstPrimary: async () => {
            await new Promise((resolve) => setTimeout(resolve, 1));
            return 'other-history' as const;
          },
        }),
    });
    const error = await f.read(sessionAt('1.50')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OtherHistoryError);
    expect(f.router.metrics().otherHistory).toBe(1);
  });

  it('a classifier that throws fails closed: a typed retryable error, the session untouched', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 } },
      configure: (adapter) =>
        Object.assign(adapter, {
          classifyAgainstPrimary: async () => {
            throw new Error('oplog query failed');
          },
        }),
    });
    const session = sessionAt('1.50');
    const error = await f.read(session).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HistoryUnverifiedError);
    expect(error).toMatchObject({ code: ErrorCode.HistoryUnverified, retryable: true });
    expect(session.positionText('default')).toBe(sessionAt('1.50').positionText('default'));
    expect(f.router.metrics()).toMatchObject({
      otherHistory: 0,
      badTokens: 0,
      historyUnverified: 1,
    });
    expect(f.adapter.readTargets()).toEqual([]);
  });

  it("a failed check under otherHistory 'primary' reads the primary and does not raise the session", async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 }, otherHistory: 'primary' },
      configure: (adapter) =>
        Object.assign(adapter, {
          classifyAgainstPrimary: () => {
            throw new Error('check failed');
          },
        }),
    });
    // Moved on after the monitor's sample (1.10), so the check has to ask, and then fails.
    f.adapter.primary.position = cp('1.60');
    const session = sessionAt('1.50');
    const { decision } = await f.read(session);
    expect(decision).toMatchObject({ target: 'primary', reason: 'primary-history-unverified' });
    // The primary read observed 1.60; raising to it would vouch for a position nobody checked.
    expect(cpText(session.position('default', f.router.codec))).toBe('1.50');
  });

  it('a stale primary sample alone does not make a genuine token impossible', async () => {
    const f = await routerFixture({ router: { wait: { budgetMs: 0 } } });
    // Another process wrote: the primary moved on after the monitor's last sample (1.10).
    f.adapter.primary.position = cp('1.50');
    const { decision } = await f.read(sessionAt('1.50'));
    expect(decision.reason).toBe('primary-fallback');
    expect(f.router.metrics().badTokens).toBe(0);
    expect(cpText(f.router.monitor.primaryPosition())).toBe('1.50');
  });

  it('an unreachable primary still lets a replica that catches up serve the read', async () => {
    const f = await routerFixture();
    f.adapter.primary.reachable = false;
    f.clock.at(20, () => {
      f.adapter.replica('r1').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.reason).toBe('replica-waited');
    expect(f.router.metrics().badTokens).toBe(0);
  });

  it('an unreachable primary and no replica in time: HistoryUnverifiedError, never a fallback', async () => {
    const f = await routerFixture();
    f.adapter.primary.reachable = false;
    const error = await f.read(sessionAt('1.12')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HistoryUnverifiedError);
    expect(f.adapter.readTargets()).toEqual([]);
    expect(f.events.decision).toEqual([]);
  });

  // Regression: after an impossible token is ignored, the retry path still plans with the
  // ignored position, so a failed replica read goes to the primary (spending the fallback cap)
  // although another healthy replica could serve a token-less read.
  it("'ignore': a retry after a failed read also ignores the impossible position", async () => {
    const f = await routerFixture({ router: { badToken: 'ignore' } });
    f.adapter.replica('r1').readFailures.push(new ScriptedConnectionError('reset'));
    const { decision } = await f.read(sessionAt('1.50'));
    expect(f.adapter.readTargets()).toEqual(['r1', 'r2']);
    expect(decision.target).toBe('r2');
    expect(decision.retried).toBe(true);
  });
});

describe('position from another history', () => {
  // History 2 forked from history 1 after seq 8: 1.9 and later were lost in the failover.
  const afterFailover = {
    adapter: { codec: counterCodec(new Map([[2, 8]])) },
    configure: (a: import('../support/scripted-adapter.js').ScriptedAdapter) => {
      a.primary.position = cp('2.12');
      a.setAll({ applied: cp('2.12') });
    },
  };

  it("default 'error': throws OtherHistoryError (TIDEMARK_OTHER_HISTORY) and counts it", async () => {
    const f = await routerFixture(afterFailover);
    const error = await f.read(sessionAt('1.9')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OtherHistoryError);
    expect((error as OtherHistoryError).code).toBe('TIDEMARK_OTHER_HISTORY');
    expect((error as OtherHistoryError).cluster).toBe('default');
    expect(f.adapter.readTargets()).toEqual([]);
    expect(f.adapter.calls.waits).toEqual([]);
    expect(f.router.metrics().otherHistory).toBe(1);
    expect(f.events.otherHistory).toEqual([{ cluster: 'default', position: cp('1.9') }]);
  });

  it("policy 'primary': reads the primary with reason primary-other-history", async () => {
    const f = await routerFixture({ ...afterFailover, router: { otherHistory: 'primary' } });
    const session = sessionAt('1.9');
    const { decision } = await f.read(session);
    expect(decision).toMatchObject({ target: 'primary', reason: 'primary-other-history' });
    expect(f.router.metrics().otherHistory).toBe(1);
    expect(f.router.metrics().byReason['primary-other-history']).toBe(1);
    // The session moves to the new history, so the next read is served by a replica.
    expect(session.positionText('default')).toBe('2.12');
    expect((await f.read(session)).decision.reason).toBe('replica-covered');
  });

  it('a position from before the fork is still covered by the new history', async () => {
    const f = await routerFixture(afterFailover);
    expect((await f.read(sessionAt('1.8'))).decision.reason).toBe('replica-covered');
  });

  it('replicas still on the old history but a primary that covers the token: primary read', async () => {
    const f = await routerFixture({
      ...afterFailover,
      configure: (a) => {
        a.primary.position = cp('2.12');
        a.setAll({ applied: cp('1.12') });
      },
    });
    const { decision } = await f.read(sessionAt('2.12'));
    // Replicas on the old history are excluded from routing (invariant 9), so none is healthy.
    expect(decision).toMatchObject({ target: 'primary', reason: 'primary-no-replica' });
    expect(f.router.metrics().otherHistory).toBe(0);
    expect(f.router.metrics().replicasDiverged).toBe(2);
    expect(f.router.monitor.states().map((s) => s.history)).toEqual(['diverged', 'diverged']);
  });
});
