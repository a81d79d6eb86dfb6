/**
 * Shadow mode (`mode: 'shadow'`), on the scripted adapter: every read runs on the primary, the
 * session is never raised by a read, and the prediction for each read equals the decision the
 * routed mode takes on the same cluster state and the same scripted catch-up. The routed run of
 * each case is the reference: a prediction that drifted from the real ladder fails here.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PRIMARY, Session } from '../../src/index.js';
import { cp } from '../support/scripted-adapter.js';
import {
  closeFixtures,
  type Fixture,
  type FixtureOptions,
  routerFixture,
  sessionAt,
} from './helpers/router-fixture.js';

afterEach(closeFixtures);

interface Case {
  readonly name: string;
  readonly options: FixtureOptions;
  /** Scripted changes during the read (a replica catching up), applied to both runs. */
  readonly script?: (f: Fixture) => void;
  readonly session: () => Session;
  /** What the routed run decided (or `error` when it threw), checked too. */
  readonly routed: string;
  readonly naiveStale: boolean | undefined;
}

const behind = (a: Parameters<NonNullable<FixtureOptions['configure']>>[0]) => {
  a.primary.position = cp('1.12');
  a.setAll({ applied: cp('1.10') });
};

const CASES: readonly Case[] = [
  {
    name: 'caught-up replicas: replica-covered, a naive read is fresh',
    options: {
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.setAll({ applied: cp('1.12') });
      },
    },
    session: () => sessionAt('1.12'),
    routed: 'replica-covered',
    naiveStale: false,
  },
  {
    name: 'no position: no-token, nothing of its own to miss',
    options: { configure: behind },
    session: () => new Session(),
    routed: 'no-token',
    naiveStale: undefined,
  },
  {
    name: 'a replica catches up after 40 ms (server-side wait): replica-waited, a naive read is stale',
    options: { configure: behind },
    script: (f) => f.clock.at(40, () => f.adapter.setAll({ applied: cp('1.12') })),
    session: () => sessionAt('1.12'),
    routed: 'replica-waited',
    naiveStale: true,
  },
  {
    name: 'replicas applied the position after their last sample: a probe now says a naive read is fresh',
    options: { configure: behind },
    script: (f) => f.adapter.setAll({ applied: cp('1.12') }),
    session: () => sessionAt('1.12'),
    routed: 'replica-waited',
    naiveStale: false,
  },
  {
    name: 'a replica catches up after 35 ms (polled probes): replica-waited',
    options: {
      adapter: { serverSideWait: false },
      router: { wait: { pollIntervalMs: 10 } },
      configure: behind,
    },
    script: (f) => f.clock.at(35, () => f.adapter.setAll({ applied: cp('1.12') })),
    session: () => sessionAt('1.12'),
    routed: 'replica-waited',
    naiveStale: true,
  },
  {
    name: 'replicas behind that never catch up: the whole budget, then primary-fallback',
    options: { configure: behind },
    session: () => sessionAt('1.12'),
    routed: 'primary-fallback',
    naiveStale: true,
  },
  {
    name: 'replay paused everywhere: primary-fallback without a wait',
    options: {
      configure: (a) => {
        behind(a);
        a.setAll({ paused: true });
      },
    },
    session: () => sessionAt('1.12'),
    routed: 'primary-fallback',
    naiveStale: true,
  },
  {
    name: "a position from another history under otherHistory 'error': the routed read throws",
    options: { configure: behind },
    session: () => sessionAt('7.3'),
    routed: 'error',
    naiveStale: true,
  },
  {
    name: "a position from another history under otherHistory 'primary': primary-other-history",
    options: { configure: behind, router: { otherHistory: 'primary' } },
    session: () => sessionAt('7.3'),
    routed: 'primary-other-history',
    naiveStale: true,
  },
  {
    name: "an impossible position under badToken 'ignore': bad-token-ignored",
    options: { configure: behind, router: { badToken: 'ignore' } },
    session: () => sessionAt('1.900'),
    routed: 'bad-token-ignored',
    naiveStale: true,
  },
];

/** A session that holds a position for another cluster only. */
function emptySession(): Session {
  return sessionAt('1.1', 'another-cluster');
}

function positionsOf(session: Session): unknown {
  return session.toTokenData().positions;
}

async function routedReason(c: Case): Promise<{ reason: string; waitedMs: number }> {
  const f = await routerFixture(c.options);
  c.script?.(f);
  try {
    const { decision } = await f.read(c.session());
    return { reason: decision.reason, waitedMs: decision.waitedMs };
  } catch {
    return { reason: 'error', waitedMs: 0 };
  }
}

describe('shadow mode predicts what routing does', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const routed = await routedReason(c);
      expect(routed.reason).toBe(c.routed);

      const f = await routerFixture({
        ...c.options,
        router: { ...c.options.router, mode: 'shadow' },
      });
      c.script?.(f);
      const session = c.session();
      const before = positionsOf(session);
      const readsBefore = f.adapter.calls.reads.length;
      const result = await f.clock.run(
        f.router.readDetailed(session, async (connection) => connection.target),
      );
      // The read itself: the primary, labelled shadow, never an error for the app.
      expect(result.value).toBe(PRIMARY);
      expect(result.decision).toMatchObject({ target: PRIMARY, reason: 'shadow' });
      expect(f.adapter.calls.reads.slice(readsBefore).map((r) => r.target)).toEqual([PRIMARY]);
      const prediction = await f.clock.run(
        result.prediction as NonNullable<typeof result.prediction>,
      );
      expect(prediction.reason).toBe(c.routed);
      expect(prediction.waitedMs).toBe(routed.waitedMs);
      expect(prediction.naiveStale).toBe(c.naiveStale);
      // Reads never raise (or drop) the session in shadow mode.
      expect(positionsOf(session)).toEqual(before);
      expect(f.router.metrics().byReason.shadow).toBe(1);
      expect(f.router.metrics().replicaReads).toBe(0);
    });
  }
});

describe('shadow report', () => {
  it('counts every prediction once settled, with naive staleness and wait percentiles', async () => {
    const f = await routerFixture({ configure: behind, router: { mode: 'shadow' } });
    f.clock.at(40, () => f.adapter.setAll({ applied: cp('1.12') }));
    const reads = [sessionAt('1.12'), sessionAt('1.10'), emptySession()].map((s) =>
      f.router.readDetailed(s, async (connection) => connection.target),
    );
    await f.clock.run(Promise.all(reads));
    await f.clock.run(f.router.shadowSettled());
    const report = f.router.shadowReport();
    expect(report).toMatchObject({
      reads: 3,
      byOutcome: { replica: 2, replica_waited: 1, primary_fallback: 0, error: 0 },
      waits: 1,
      waitMsP50: 40,
      waitMsP99: 40,
      naiveChecked: 2,
      naiveStale: 1,
      pending: 0,
    });
  });

  it('is undefined in route mode', async () => {
    const f = await routerFixture();
    expect(f.router.shadowReport()).toBeUndefined();
    await f.router.shadowSettled();
  });

  it("rejects an unknown mode with a ConfigError naming 'mode'", async () => {
    await expect(routerFixture({ router: { mode: 'mirror' as 'shadow' } })).rejects.toThrow(
      /mode must be one of 'route', 'shadow'/,
    );
  });
});
