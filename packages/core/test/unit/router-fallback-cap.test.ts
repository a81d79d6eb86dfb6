/**
 * The default primary fallback cap (invariant 5): a bound on concurrent fallback reads, with a
 * short queue. It must never bind on a healthy primary during a replica incident (replay paused
 * everywhere: every token-bearing read needs the primary), and must bind when the primary is
 * slow. The old default (token bucket 50/s, burst 50) fails the first test; no cap at all fails
 * the second.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PRIMARY, ReplicasBehindError, type RouteDecision, Session } from '../../src/index.js';
import { cp, type ScriptedConnection } from '../support/scripted-adapter.js';
import {
  closeFixtures,
  type FixtureOptions,
  routerFixture,
  sessionAt,
} from './helpers/router-fixture.js';

afterEach(closeFixtures);

/** Replay paused on every replica, behind the primary; the primary itself is healthy. */
const incident = (router: FixtureOptions['router'] = {}): FixtureOptions => ({
  router,
  configure: (a) => {
    a.primary.position = cp('1.12');
    a.setAll({ applied: cp('1.10'), paused: true });
  },
});

/** A read callback taking `primaryMs` of clock time on the primary; counts concurrent ones. */
function timedRead(clock: { sleep(ms: number): Promise<void> }, primaryMs: number) {
  const stats = { inFlight: 0, maxInFlight: 0 };
  const fn = async (connection: ScriptedConnection) => {
    if (connection.target !== PRIMARY) return connection.target;
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    try {
      await clock.sleep(primaryMs);
    } finally {
      stats.inFlight--;
    }
    return connection.target;
  };
  return { fn, stats };
}

describe('default fallback cap', () => {
  it('never binds a sequential loop of token reads on a healthy primary (2,000 reads in 2 s)', async () => {
    const f = await routerFixture(incident());
    const { fn } = timedRead(f.clock, 1);
    const loop = async () => {
      const decisions: RouteDecision[] = [];
      for (let i = 0; i < 2000; i++) {
        decisions.push((await f.router.readDetailed(sessionAt('1.12'), fn)).decision);
      }
      return decisions;
    };
    const decisions = await f.clock.run(loop());
    expect(decisions.every((d) => d.target === PRIMARY && d.reason === 'primary-fallback')).toBe(
      true,
    );
    expect(f.router.metrics().capRejections).toBe(0);
    expect(f.events.capRejected).toEqual([]);
  });

  it('serves 64 concurrent token reads on a healthy primary: 16 run at once at first, none fails', async () => {
    const f = await routerFixture(incident({ fallback: { maxConcurrent: 16 } }));
    const { fn, stats } = timedRead(f.clock, 1);
    const reads = Array.from({ length: 64 }, () => f.router.readDetailed(sessionAt('1.12'), fn));
    const results = await f.clock.run(Promise.all(reads));
    expect(results.every((r) => r.decision.target === PRIMARY)).toBe(true);
    expect(stats.maxInFlight).toBe(16);
    expect(f.router.metrics().capRejections).toBe(0);
  });

  it('binds on a slow primary: 16 reads run, the rest fail with ReplicasBehindError after the 250 ms queue', async () => {
    const f = await routerFixture(incident());
    const { fn, stats } = timedRead(f.clock, 2000);
    const started = f.clock.now();
    const outcomes = Array.from({ length: 100 }, () =>
      f.router.readDetailed(sessionAt('1.12'), fn).then(
        (r) => ({ ok: true as const, at: f.clock.now(), target: r.decision.target }),
        (error: unknown) => ({ ok: false as const, at: f.clock.now(), error }),
      ),
    );
    const settled = await f.clock.run(Promise.all(outcomes));
    const served = settled.filter((o) => o.ok);
    const refused = settled.filter((o) => !o.ok);
    expect(served).toHaveLength(16);
    expect(stats.maxInFlight).toBe(16);
    expect(refused).toHaveLength(84);
    for (const outcome of refused) {
      expect(outcome.error).toBeInstanceOf(ReplicasBehindError);
      expect(outcome.at - started).toBe(250);
    }
    expect(f.router.metrics().capRejections).toBe(84);
  });

  it("binds on a slow primary with degraded 'stale': the rest are served by a replica, marked stale", async () => {
    const f = await routerFixture(incident({ degraded: 'stale' }));
    const { fn } = timedRead(f.clock, 2000);
    const reads = Array.from({ length: 20 }, () => f.router.readDetailed(sessionAt('1.12'), fn));
    const results = await f.clock.run(Promise.all(reads));
    const primary = results.filter((r) => r.decision.target === PRIMARY);
    const stale = results.filter((r) => r.decision.stale);
    expect(primary).toHaveLength(16);
    expect(stale).toHaveLength(4);
    expect(stale.every((r) => r.decision.reason === 'degraded-stale')).toBe(true);
  });

  it('a slot freed while reads queue goes to the longest-queued read', async () => {
    const f = await routerFixture(incident({ fallback: { maxConcurrent: 1, queueMs: 100 } }));
    const { fn } = timedRead(f.clock, 30);
    const order: number[] = [];
    const reads = [0, 1, 2].map((i) =>
      f.router.readDetailed(sessionAt('1.12'), fn).then(() => order.push(i)),
    );
    await f.clock.run(Promise.all(reads));
    expect(order).toEqual([0, 1, 2]);
  });

  it('queueMs 0: a read that finds every slot taken degrades at once', async () => {
    const f = await routerFixture(incident({ fallback: { maxConcurrent: 2, queueMs: 0 } }));
    const { fn } = timedRead(f.clock, 50);
    const started = f.clock.now();
    const outcomes = Array.from({ length: 3 }, () =>
      f.router.readDetailed(sessionAt('1.12'), fn).then(
        () => 'ok',
        (error: unknown) =>
          error instanceof ReplicasBehindError ? f.clock.now() - started : error,
      ),
    );
    expect(await f.clock.run(Promise.all(outcomes))).toEqual(['ok', 'ok', 0]);
  });

  it('a queued read whose caller aborts gives up its place', async () => {
    const f = await routerFixture(incident({ fallback: { maxConcurrent: 1, queueMs: 1000 } }));
    const { fn } = timedRead(f.clock, 200);
    const first = f.router.readDetailed(sessionAt('1.12'), fn);
    const controller = new AbortController();
    const second = f.router
      .readDetailed(sessionAt('1.12'), fn, { signal: controller.signal })
      .catch((error: unknown) => error);
    f.clock.at(10, () => controller.abort());
    const [, error] = await f.clock.run(Promise.all([first, second]));
    expect(error).toBeInstanceOf(ReplicasBehindError);
    // The slot the first read frees is not held for the aborted one.
    const third = await f.clock.run(f.router.readDetailed(sessionAt('1.12'), fn));
    expect(third.decision.target).toBe(PRIMARY);
  });

  it('tokenless reads with no healthy replica (primary-no-replica) share the same cap', async () => {
    const f = await routerFixture({
      configure: (a) => a.setAll({ reachable: false }),
      router: { fallback: { maxConcurrent: 2, queueMs: 0 } },
    });
    const { fn } = timedRead(f.clock, 50);
    const reads = Array.from({ length: 3 }, () =>
      f.router.readDetailed(new Session(), fn).then(
        (r) => r.decision.reason,
        (error: unknown) => (error as Error).name,
      ),
    );
    expect(await f.clock.run(Promise.all(reads))).toEqual([
      'primary-no-replica',
      'primary-no-replica',
      'ReplicasBehindError',
    ]);
  });
});

describe('explicit token bucket', () => {
  it('fallback.ratePerSecond/burst still cap a sequential loop when set', async () => {
    const f = await routerFixture(incident({ fallback: { ratePerSecond: 0, burst: 3 } }));
    const targets: Array<string> = [];
    for (let i = 0; i < 6; i++) {
      const outcome = await f
        .read(sessionAt('1.12'))
        .then((r) => r.decision.target)
        .catch((error: unknown) => (error as Error).name);
      targets.push(outcome);
    }
    expect(targets).toEqual([
      PRIMARY,
      PRIMARY,
      PRIMARY,
      'ReplicasBehindError',
      'ReplicasBehindError',
      'ReplicasBehindError',
    ]);
  });

  it('the bucket and the concurrency bound both apply', async () => {
    const f = await routerFixture(
      incident({ fallback: { ratePerSecond: 0, burst: 100, maxConcurrent: 2, queueMs: 0 } }),
    );
    const { fn, stats } = timedRead(f.clock, 50);
    const reads = Array.from({ length: 5 }, () =>
      f.router.readDetailed(sessionAt('1.12'), fn).then(
        () => 'ok',
        () => 'refused',
      ),
    );
    const results = await f.clock.run(Promise.all(reads));
    expect(results.filter((r) => r === 'ok')).toHaveLength(2);
    expect(stats.maxInFlight).toBe(2);
  });
});

/**
 * Open-loop fallback load: `perMs` token reads arrive every clock millisecond for `ms`, each
 * holding the primary for `latencyMs()` (clock time). Resolves the outcome counts.
 */
async function offered(
  f: Awaited<ReturnType<typeof routerFixture>>,
  perMs: number,
  ms: number,
  latencyMs: (at: number) => number,
) {
  const counts = { served: 0, refused: 0, maxInFlight: 0 };
  let inFlight = 0;
  const fn = async (connection: ScriptedConnection) => {
    if (connection.target === PRIMARY) {
      inFlight++;
      counts.maxInFlight = Math.max(counts.maxInFlight, inFlight);
      try {
        await f.clock.sleep(latencyMs(f.clock.now()));
      } finally {
        inFlight--;
      }
    }
    return connection.target;
  };
  const all: Promise<void>[] = [];
  const arrivals = async () => {
    for (let t = 0; t < ms; t++) {
      for (let i = 0; i < perMs; i++) {
        all.push(
          f.router.read(sessionAt('1.12'), fn).then(
            () => void counts.served++,
            () => void counts.refused++,
          ),
        );
      }
      await f.clock.sleep(1);
    }
    await Promise.all(all);
  };
  await f.clock.run(arrivals());
  return counts;
}

describe("fallback.maxConcurrent 'auto' (the default)", () => {
  // 4 reads/ms at 6 ms each need 24 slots: more than a fixed 16 pass (16 / 6 ms = 2.7/ms).
  it('grows past 16 for a healthy primary under more fallback load than 16 slots pass; no read refused (control: a fixed 16 refuses)', async () => {
    const auto = await routerFixture(incident());
    const autoCounts = await offered(auto, 4, 800, () => 6);
    const fixed = await routerFixture(incident({ fallback: { maxConcurrent: 16 } }));
    const fixedCounts = await offered(fixed, 4, 800, () => 6);
    expect(fixedCounts.refused).toBeGreaterThan(300);
    expect(fixedCounts.maxInFlight).toBe(16);
    expect(autoCounts.refused).toBe(0);
    expect(autoCounts.served).toBe(3200);
    expect(autoCounts.maxInFlight).toBeGreaterThan(16);
    expect(auto.router.metrics().fallbackLimit).toBeGreaterThan(16);
    expect(auto.router.metrics().fallbackLimit).toBeLessThanOrEqual(256);
  });

  it('shrinks back to 16 when the primary slows down, and then binds as a fixed 16 does', async () => {
    const f = await routerFixture(incident());
    await offered(f, 4, 800, () => 6);
    const grown = f.router.metrics().fallbackLimit!;
    expect(grown).toBeGreaterThan(16);
    // The primary now takes 200 ms per read (4x the healthy bound, 66x its usual time).
    const slow = await offered(f, 1, 3000, () => 200);
    expect(f.router.metrics().fallbackLimit).toBe(16);
    expect(slow.refused).toBeGreaterThan(0);
    const binding = await offered(f, 10, 300, () => 200);
    expect(binding.maxInFlight).toBeLessThanOrEqual(16);
  });

  it('never grows for a primary whose fallback reads take over 50 ms, however busy', async () => {
    const f = await routerFixture(incident());
    const counts = await offered(f, 2, 2000, () => 60);
    expect(f.router.metrics().fallbackLimit).toBe(16);
    expect(counts.maxInFlight).toBe(16);
    expect(counts.refused).toBeGreaterThan(0);
  });
});
