import { afterEach, describe, expect, it } from 'vitest';
import type { PositionCodec } from '../../src/adapter-kit/index.js';
import { ErrorCode, OtherHistoryError, type RouterEvents, Session } from '../../src/index.js';
import { type CounterPosition, counterCodec } from '../support/counter-codec.js';
import { cp, cpText } from '../support/scripted-adapter.js';
import { closeFixtures, type Fixture, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

// History 2 forked from history 1 after seq 8: 1.9 and later exist only on the old history.
const FORKED = new Map([[2, 8]]);

/** After a failover: the primary is on history 2; r1 still holds the lost 1.12, r2 follows 2. */
function afterFailover(codec: PositionCodec<CounterPosition> = counterCodec(FORKED)) {
  return {
    adapter: { codec },
    configure: (a: Fixture['adapter']) => {
      a.primary.position = cp('2.12');
      a.replica('r1').applied = cp('1.12');
      a.replica('r2').applied = cp('2.12');
    },
  };
}

async function tokenless(f: Fixture, reads: number): Promise<string[]> {
  const targets: string[] = [];
  for (let i = 0; i < reads; i++) targets.push((await f.read(new Session())).decision.target);
  return targets;
}

describe('replica on another history than the primary (invariant 9)', () => {
  it('is excluded for tokenless reads and for tokens it seems to cover, and reported', async () => {
    const f = await routerFixture(afterFailover());
    expect(f.router.monitor.state('r1')?.history).toBe('diverged');
    expect(f.router.monitor.state('r2')?.history).toBe('current');
    expect(new Set(await tokenless(f, 20))).toEqual(new Set(['r2']));
    // A token holding the lost write: r1 "covers" it on its own history; it must never serve it.
    const error = await f.read(sessionAt('1.12')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OtherHistoryError);
    expect(f.adapter.readTargets()).not.toContain('r1');
    expect(f.router.metrics().replicasDiverged).toBe(1);
  });

  it('serves reads again once the replica follows the primary history', async () => {
    const history: Array<Parameters<RouterEvents<CounterPosition>['replica-history']>[0]> = [];
    const f = await routerFixture(afterFailover());
    f.router.events.on('replica-history', (event) => history.push(event));
    f.adapter.replica('r1').applied = cp('2.12'); // rewound and re-pointed
    await f.clock.run(f.router.monitor.refresh('r1'));
    expect(f.router.monitor.state('r1')?.history).toBe('current');
    expect(history).toEqual([
      { cluster: 'default', replica: 'r1', history: 'current', previous: 'diverged' },
    ]);
    expect(await tokenless(f, 5)).toContain('r1');
  });

  it('a replica only behind on the shared part of the history stays current', async () => {
    const f = await routerFixture({
      ...afterFailover(),
      configure: (a) => {
        a.primary.position = cp('2.12');
        a.replica('r1').applied = cp('1.7'); // before the fork: on the path to history 2
        a.replica('r2').applied = cp('2.12');
      },
    });
    expect(f.router.monitor.state('r1')?.history).toBe('current');
  });

  it('an adapter verdict tells a replica ahead of an old primary sample from a diverged one', async () => {
    // Set-shaped positions (GTID sets) never compare as other-history by themselves.
    const f = await routerFixture({
      configure: (a) =>
        Object.assign(a, {
          classifyAgainstPrimary: (_primary: CounterPosition, applied: CounterPosition) =>
            applied.seq === 99 ? 'other-history' : 'impossible',
        }),
    });
    f.adapter.replica('r1').applied = cp('1.11'); // ahead of the primary sample: fine
    f.adapter.replica('r2').applied = cp('1.99'); // errant changes: diverged
    await f.clock.run(f.router.monitor.refresh());
    expect(f.router.monitor.states().map((s) => s.history)).toEqual(['current', 'diverged']);
  });

  it('without any primary sample no replica is judged current (fail closed)', async () => {
    const f = await routerFixture({ configure: (a) => (a.primary.reachable = false) });
    expect(f.router.monitor.states().map((s) => s.history)).toEqual(['unknown', 'unknown']);
    const { decision } = await f.read(new Session()).catch(() => ({ decision: undefined }));
    expect(decision?.target ?? 'error').not.toMatch(/^r/);
  });
});

describe('replica cut off from its primary (staleness measured against the primary)', () => {
  const HEALTH = { maxLagSeconds: 1, maxSampleAgeMs: 60_000 };

  it('leaves routing once the primary has moved on for longer than maxLagSeconds', async () => {
    const f = await routerFixture({ router: { health: HEALTH } });
    // r1 stops receiving: it keeps reporting lag 0 (it replayed all it got).
    const r1 = f.adapter.replica('r1');
    r1.lagSeconds = 0;
    f.adapter.primary.position = cp('1.20');
    f.adapter.replica('r2').applied = cp('1.20');
    await f.clock.run(f.router.monitor.refreshPrimary());
    await f.clock.run(f.router.monitor.refresh());
    // Within the limit r1 is still a candidate (least-lag keeps configuration order on ties).
    expect(await tokenless(f, 5)).toContain('r1');
    await f.clock.run(f.clock.sleep(1100));
    await f.clock.run(f.router.monitor.refreshPrimary());
    await f.clock.run(f.router.monitor.refresh());
    expect(new Set(await tokenless(f, 20))).toEqual(new Set(['r2']));
    expect(f.router.monitor.state('r1')?.lagSeconds).toBe(0);
  });

  it('stays in routing while the primary is idle: it is missing nothing', async () => {
    const f = await routerFixture({ router: { health: HEALTH } });
    await f.clock.run(f.clock.sleep(5000));
    await f.clock.run(f.router.monitor.refreshPrimary());
    await f.clock.run(f.router.monitor.refresh());
    expect(await tokenless(f, 5)).toContain('r1');
  });
});

describe('write after a failover (write-time verdicts, invariant 4)', () => {
  it('reports the lost earlier write, and the session continues on the new history', async () => {
    const lost: Array<Parameters<RouterEvents<CounterPosition>['lost-write']>[0]> = [];
    const f = await routerFixture(afterFailover());
    f.router.events.on('lost-write', (event) => lost.push(event));
    const session = sessionAt('1.12');
    const result = await f.clock.run(f.router.writeDetailed(session, async () => 'ok'));
    expect(result).toEqual({
      value: 'ok',
      lostWrite: { cluster: 'default', position: '1.12', verdict: 'other-history' },
    });
    expect(lost).toHaveLength(1);
    expect(f.router.metrics().lostWrites).toBe(1);
    expect(cpText(session.position('default', f.router.codec))).toBe('2.13');
  });

  it('where positions of two histories merge by sequence (MariaDB domains), the next read still sees the new write', async () => {
    // Merge by sequence number alone, as a MariaDB GTID domain does: 1.12 "beats" 2.10.
    const base = counterCodec(FORKED);
    const bySeq: PositionCodec<CounterPosition> = {
      ...base,
      merge: (a, b) => (a.seq >= b.seq ? a : b),
    };
    const f = await routerFixture({
      ...afterFailover(bySeq),
      configure: (a) => {
        a.primary.position = cp('2.9');
        a.replica('r1').applied = cp('1.12');
        a.replica('r2').applied = cp('2.9');
      },
    });
    const session = sessionAt('1.12');
    const { lostWrite } = await f.clock.run(f.router.writeDetailed(session, async () => 'ok'));
    expect(lostWrite?.verdict).toBe('other-history');
    expect(cpText(session.position('default', f.router.codec))).toBe('2.10');
    f.adapter.replica('r2').applied = cp('2.10');
    await f.clock.run(f.router.monitor.refresh());
    const { decision } = await f.read(session);
    expect(decision.target).toBe('r2');
  });

  it('costs no primary probe when the held position is covered by the write', async () => {
    const f = await routerFixture();
    const session = sessionAt('1.5');
    const probes = f.adapter.calls.probes.length;
    const { lostWrite } = await f.clock.run(f.router.writeDetailed(session, async () => 'ok'));
    expect(lostWrite).toBeUndefined();
    expect(f.adapter.calls.probes.length).toBe(probes);
    expect(cpText(session.position('default', f.router.codec))).toBe('1.11');
  });

  it('says "unverified" when the primary cannot be asked, and keeps the new write readable', async () => {
    const f = await routerFixture(afterFailover());
    // The write commits; the primary then stops answering the check (frozen, overloaded).
    Object.assign(f.adapter, {
      probePrimary: async () => {
        throw new Error('primary did not answer');
      },
    });
    const session = sessionAt('1.12');
    const { lostWrite } = await f.clock.run(f.router.writeDetailed(session, async () => 'ok'));
    expect(lostWrite).toEqual({ cluster: 'default', position: '1.12', verdict: 'unverified' });
    expect(cpText(session.position('default', f.router.codec))).toBe('2.13');
  });
});

describe('fallback cap for other-history positions (invariant 5, 8)', () => {
  it("forged other-history tokens under otherHistory 'primary' cannot drain the shared cap", async () => {
    const f = await routerFixture({
      ...afterFailover(),
      router: {
        otherHistory: 'primary',
        wait: { budgetMs: 0 },
        fallback: { ratePerSecond: 1, burst: 5, otherHistory: { ratePerSecond: 1, burst: 3 } },
      },
    });
    const outcomes: string[] = [];
    for (let i = 0; i < 6; i++) {
      outcomes.push(
        await f
          .read(sessionAt(`1.${20 + i}`))
          .then(({ decision }) => decision.reason)
          .catch((e: { code?: string }) => e.code ?? 'error'),
      );
    }
    expect(outcomes).toEqual([
      'primary-other-history',
      'primary-other-history',
      'primary-other-history',
      ErrorCode.OtherHistory,
      ErrorCode.OtherHistory,
      ErrorCode.OtherHistory,
    ]);
    // An honest session whose replicas are behind still gets the full shared cap.
    f.adapter.setAll({ applied: cp('2.12') });
    f.adapter.primary.position = cp('2.40');
    await f.clock.run(f.router.monitor.refreshPrimary());
    const honest: string[] = [];
    for (let i = 0; i < 5; i++) honest.push((await f.read(sessionAt('2.40'))).decision.reason);
    expect(honest).toEqual(Array(5).fill('primary-fallback'));
  });
});

describe('deferred write capture (invariant 1)', () => {
  /** An adapter that skips the capture when allowed, as the pg adapter does for autocommit. */
  function uncaptured(f: Fixture): void {
    const write = f.adapter.write.bind(f.adapter);
    Object.assign(f.adapter, {
      write: async (fn: never, options: { capture?: boolean }) => {
        const outcome = await write(fn, options);
        return options.capture === false ? { value: outcome.value } : outcome;
      },
    });
  }

  it('settles from a primary probe sent after the write, before the next read routes', async () => {
    const f = await routerFixture();
    uncaptured(f);
    const session = new Session();
    await f.clock.run(f.router.write(session, async () => 'ok'));
    expect(session.pendingTargets('default')).toEqual(['primary']);
    // Replicas still at 1.10; the write made the primary 1.11: the read must not see 1.10.
    const { decision } = await f.read(session);
    expect(decision.target).toBe('primary');
    expect(cpText(session.position('default', f.router.codec))).toBe('1.11');
  });

  it('one primary probe settles many writes that finished before it was sent', async () => {
    const f = await routerFixture();
    uncaptured(f);
    const sessions = Array.from({ length: 6 }, () => new Session());
    for (const session of sessions) await f.clock.run(f.router.write(session, async () => 'ok'));
    const before = f.adapter.calls.probes.filter((p) => p.target === 'primary').length;
    await f.clock.run(Promise.all(sessions.map((s) => s.settled())));
    expect(f.adapter.calls.probes.filter((p) => p.target === 'primary').length - before).toBe(1);
    expect(sessions.map((s) => s.positionText('default'))).toEqual(Array(6).fill('1.16'));
  });

  it('writeDetailed always captures: the verdict is part of its answer', async () => {
    const f = await routerFixture();
    uncaptured(f);
    const session = new Session();
    await f.clock.run(f.router.writeDetailed(session, async () => 'ok'));
    expect(session.unsettled).toBe(false);
    expect(session.positionText('default')).toBe('1.11');
  });
});

describe('adapters whose covered is no proof of history (coveredNeedsVerdict)', () => {
  // A lost write at 1.12, a new history whose sequence passed it; the codec alone says covered.
  const lostAt12 = (_primary: CounterPosition, position: CounterPosition) =>
    position.history === 1 && position.seq >= 9 ? ('other-history' as const) : ('ok' as const);
  const bySeqOnly: PositionCodec<CounterPosition> = {
    ...counterCodec(FORKED),
    compare: (applied, required) => (applied.seq >= required.seq ? 'covered' : 'behind'),
  };

  it('the verdict refutes covered for tokens and replicas alike', async () => {
    const f = await routerFixture({
      adapter: { codec: bySeqOnly },
      configure: (a) => {
        a.primary.position = cp('2.20');
        a.replica('r1').applied = cp('1.12'); // left on the old history
        a.replica('r2').applied = cp('2.20');
        Object.assign(a, { classifyAgainstPrimary: lostAt12, coveredNeedsVerdict: true });
      },
    });
    expect(f.router.monitor.states().map((s) => s.history)).toEqual(['diverged', 'current']);
    const error = await f.read(sessionAt('1.12')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OtherHistoryError);
    expect(f.adapter.readTargets()).toEqual([]);
  });

  it('without the flag the codec decides (control: the lost token is served as covered)', async () => {
    const f = await routerFixture({
      adapter: { codec: bySeqOnly },
      configure: (a) => {
        a.primary.position = cp('2.20');
        a.setAll({ applied: cp('2.20') });
        Object.assign(a, { classifyAgainstPrimary: lostAt12 });
      },
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.reason).toBe('replica-covered');
  });
});
