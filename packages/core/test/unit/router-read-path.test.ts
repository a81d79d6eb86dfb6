import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, ReplicasBehindError, type SelectionPolicy, Session } from '../../src/index.js';
import { cp, cpText, ScriptedConnectionError } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

/** Picks the first candidate, so only the health filter decides which replica is used. */
const firstCandidate: SelectionPolicy = { name: 'first', select: (candidates) => candidates[0]! };

afterEach(closeFixtures);

describe('read without a token', () => {
  it('goes to a healthy replica with reason no-token, without waiting', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.replica('r1').lagSeconds = 2;
        a.replica('r2').lagSeconds = 0.5;
      },
    });
    const { value, decision } = await f.read(new Session());
    expect(decision).toEqual({
      cluster: 'default',
      target: 'r2',
      reason: 'no-token',
      waitedMs: 0,
      stale: false,
      retried: false,
    });
    expect(value).toBe('read on r2');
    expect(f.adapter.readTargets()).toEqual(['r2']);
    expect(f.adapter.calls.waits).toEqual([]);
    expect(f.events.decision).toEqual([{ ...decision, durationMs: expect.any(Number) }]);
    const metrics = f.router.metrics();
    expect(metrics.reads).toBe(1);
    expect(metrics.replicaReads).toBe(1);
    expect(metrics.primaryReads).toBe(0);
    expect(metrics.replicaShare).toBe(1);
    expect(metrics.byReason['no-token']).toBe(1);
  });

  it('goes to the primary with reason primary-no-replica when no replica is healthy', async () => {
    const f = await routerFixture({ configure: (a) => a.setAll({ reachable: false }) });
    const { decision } = await f.read(new Session());
    expect(decision.target).toBe('primary');
    expect(decision.reason).toBe('primary-no-replica');
    expect(f.adapter.readTargets()).toEqual(['primary']);
    expect(f.router.metrics().primaryReads).toBe(1);
    expect(f.router.metrics().byReason['primary-no-replica']).toBe(1);
  });
});

describe('read with a token a replica already covers', () => {
  it('goes to a covering replica (replica-covered), even when a behind one has less lag', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.replica('r1').applied = cp('1.12');
        a.replica('r1').lagSeconds = 5;
        a.replica('r2').lagSeconds = 0;
      },
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.target).toBe('r1');
    expect(decision.reason).toBe('replica-covered');
    expect(decision.waitedMs).toBe(0);
    expect(decision.stale).toBe(false);
    expect(f.adapter.calls.waits).toEqual([]);
    expect(f.router.metrics().byReason['replica-covered']).toBe(1);
  });
});

describe('health filter', () => {
  it('skips an unreachable replica', async () => {
    const f = await routerFixture({
      router: { selection: firstCandidate },
      configure: (a) => {
        a.replica('r1').reachable = false;
      },
    });
    expect(f.router.monitor.state('r1')?.reachable).toBe(false);
    const { decision } = await f.read(new Session());
    expect(decision.target).toBe('r2');
  });

  it('skips a replica whose sample is older than maxSampleAgeMs', async () => {
    const f = await routerFixture({
      router: { selection: firstCandidate, health: { maxSampleAgeMs: 500 } },
    });
    expect((await f.read(new Session())).decision.target).toBe('r1');
    await f.clock.advance(501);
    await f.clock.run(f.router.monitor.refresh('r2'));
    expect((await f.read(new Session())).decision.target).toBe('r2');
    await f.clock.advance(501);
    // Both samples are now too old: no replica counts as healthy.
    expect((await f.read(new Session())).decision.reason).toBe('primary-no-replica');
  });

  it('keeps a replica whose sample is exactly maxSampleAgeMs old', async () => {
    const f = await routerFixture({
      router: { selection: firstCandidate, health: { maxSampleAgeMs: 500 } },
    });
    await f.clock.advance(500);
    expect((await f.read(new Session())).decision.target).toBe('r1');
  });

  it('skips a replica whose lag is over maxLagSeconds', async () => {
    const f = await routerFixture({
      router: { selection: firstCandidate, health: { maxLagSeconds: 10 } },
      configure: (a) => {
        a.replica('r1').lagSeconds = 10.5;
        a.replica('r2').lagSeconds = 9;
      },
    });
    expect((await f.read(new Session())).decision.target).toBe('r2');
  });

  it('counts a replica that reports no lag figure as healthy', async () => {
    const f = await routerFixture({
      router: { selection: firstCandidate },
      configure: (a) => {
        a.replica('r1').lagSeconds = undefined;
      },
    });
    expect((await f.read(new Session())).decision.target).toBe('r1');
  });

  it('skips a replica that was never sampled', async () => {
    const f = await routerFixture({
      router: { selection: firstCandidate },
      configure: (a) => {
        a.holdProbes('r1');
      },
      skipReady: true,
    });
    await f.clock.run(f.router.monitor.refresh('r2'));
    expect(f.router.monitor.state('r1')?.sampledAt).toBe(Number.NEGATIVE_INFINITY);
    expect(f.router.monitor.state('r1')?.applied).toBeUndefined();
    expect((await f.read(new Session())).decision.target).toBe('r2');
  });
});

describe('bounded wait', () => {
  it('waits server-side with adapter.waitFor on the least-lagged replica (replica-waited)', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.replica('r1').lagSeconds = 3;
        a.replica('r2').lagSeconds = 0.2;
      },
    });
    const probesBefore = f.adapter.calls.probes.length;
    f.clock.at(40, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.target).toBe('r2');
    expect(decision.reason).toBe('replica-waited');
    expect(decision.waitedMs).toBe(40);
    expect(f.adapter.calls.waits.map((w) => [w.replica, cpText(w.position), w.timeoutMs])).toEqual([
      ['r2', '1.12', 250],
    ]);
    // Server-side: the replicas were not polled.
    expect(f.adapter.calls.probes.slice(probesBefore).map((p) => p.target)).not.toContain('r2');
    expect(f.events.wait).toEqual([
      { cluster: 'default', replica: 'r2', waitedMs: 40, reached: true, serverSide: true },
    ]);
    const metrics = f.router.metrics();
    expect(metrics.waits).toBe(1);
    expect(metrics.waitsReached).toBe(1);
    expect(metrics.waitMsTotal).toBe(40);
    expect(metrics.byReason['replica-waited']).toBe(1);
    // The wait's result is fed back to the monitor.
    expect(cpText(f.router.monitor.state('r2')?.applied)).toBe('1.12');
  });

  it('polls probes when the adapter has no waitFor (replica-waited)', async () => {
    const f = await routerFixture({
      adapter: { serverSideWait: false },
      router: { wait: { pollIntervalMs: 10 } },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    expect(f.adapter.waitFor).toBeUndefined();
    const r2ProbesBefore = f.adapter.probeCount('r2');
    f.clock.at(35, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.target).toBe('r2');
    expect(decision.reason).toBe('replica-waited');
    // Polls every 10 ms (set here): the first poll after 35 ms is at 40 ms.
    expect(decision.waitedMs).toBe(40);
    expect(f.adapter.probeCount('r2') - r2ProbesBefore).toBe(5);
    expect(f.events.wait).toEqual([
      { cluster: 'default', replica: 'r2', waitedMs: 40, reached: true, serverSide: false },
    ]);
  });

  it("polls instead when waitFor answers 'unsupported' for the replica", async () => {
    const f = await routerFixture({
      adapter: { waitBehaviour: async () => ({ outcome: 'unsupported' }) },
      router: { wait: { pollIntervalMs: 10 } },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    f.clock.at(25, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(f.adapter.calls.waits).toHaveLength(1);
    expect(decision).toMatchObject({ target: 'r2', reason: 'replica-waited', waitedMs: 30 });
    expect(f.events.wait).toEqual([
      { cluster: 'default', replica: 'r2', waitedMs: 30, reached: true, serverSide: false },
    ]);
  });

  it('does not wait on a paused replica, even the least lagged one', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.replica('r1').paused = true;
        a.replica('r1').lagSeconds = 0.1;
        a.replica('r2').lagSeconds = 2;
      },
    });
    f.clock.at(20, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(f.adapter.calls.waits.map((w) => w.replica)).toEqual(['r2']);
    expect(decision.target).toBe('r2');
    expect(decision.reason).toBe('replica-waited');
  });

  it('falls back at once, without waiting, when every behind replica is paused', async () => {
    const f = await routerFixture({
      adapter: { serverSideWait: false },
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.setAll({ paused: true });
      },
    });
    const probesBefore = f.adapter.probeCount('r1') + f.adapter.probeCount('r2');
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.target).toBe('primary');
    expect(decision.waitedMs).toBe(0);
    expect(f.adapter.probeCount('r1') + f.adapter.probeCount('r2')).toBe(probesBefore);
    expect(f.router.metrics().waits).toBe(0);
  });

  // Regression: paused replicas are healthy, yet the decision says "no healthy replica".
  it('labels a fallback past paused (healthy) replicas primary-fallback, not primary-no-replica', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.setAll({ paused: true });
      },
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.reason).toBe('primary-fallback');
  });

  it('uses one total budget: the server-side wait only gets what the primary check left', async () => {
    const f = await routerFixture({ router: { wait: { budgetMs: 100 } } });
    // The primary moved on after the monitor sampled it (1.10), so the router probes the primary
    // (30 ms) before waiting; that time comes out of the same budget.
    f.adapter.primary.position = cp('1.12');
    f.adapter.primary.probeDelayMs = 30;
    const { decision } = await f.read(sessionAt('1.12'));
    expect(f.adapter.calls.waits.map((w) => w.timeoutMs)).toEqual([70]);
    expect(decision.reason).toBe('primary-fallback');
    expect(decision.waitedMs).toBe(100);
    expect(f.events.wait).toEqual([
      { cluster: 'default', replica: 'r1', waitedMs: 70, reached: false, serverSide: true },
    ]);
  });

  it('keeps polling for the rest of the budget when the server-side wait fails', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 100, pollIntervalMs: 10 } },
      adapter: {
        waitBehaviour: async () => {
          throw new ScriptedConnectionError('wait interrupted');
        },
      },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    f.clock.at(25, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(f.adapter.calls.waits).toHaveLength(1);
    expect(decision.target).toBe('r2');
    expect(decision.reason).toBe('replica-waited');
    expect(decision.waitedMs).toBe(30);
  });

  it('never waits past the budget when no replica catches up (polling)', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 95, pollIntervalMs: 10 } },
      adapter: { serverSideWait: false },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.reason).toBe('primary-fallback');
    expect(decision.waitedMs).toBe(95);
  });

  // Regression: the poll loop awaits a probe without bounding it by the remaining budget,
  // so one slow replica stretches a 100 ms budget to the probe's own duration (up to
  // probeTimeoutMs, 1 s by default).
  it('does not let a slow probe stretch the wait past the budget (polling)', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 100 } },
      adapter: { serverSideWait: false },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    f.adapter.replica('r1').probeDelayMs = 1_000;
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.waitedMs).toBeLessThanOrEqual(100 + 10);
  });

  it("passes the caller's abort to the server-side wait", async () => {
    const f = await routerFixture({ configure: (a) => (a.primary.position = cp('1.12')) });
    const controller = new AbortController();
    f.clock.at(30, () => controller.abort());
    const read = f.router.readDetailed(sessionAt('1.12'), async () => 'x', {
      signal: controller.signal,
    });
    const { decision } = await f.clock.run(read);
    expect(f.adapter.calls.waits[0]?.signal.aborted).toBe(true);
    expect(decision.waitedMs).toBe(30);
  });

  // Regression: linkedController adds an 'abort' listener to the caller's signal for every
  // server-side wait and never removes it, so a long-lived signal (a server shutdown signal
  // shared by all requests) accumulates one listener per waited read.
  it("leaves no listeners on the caller's signal after server-side waits", async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 5 } },
      configure: (a) => (a.primary.position = cp('1.12')),
    });
    const shutdown = new AbortController();
    for (let i = 0; i < 20; i++) {
      const read = f.router.readDetailed(sessionAt('1.12'), async () => 'x', {
        signal: shutdown.signal,
      });
      await f.clock.run(read);
    }
    expect(f.adapter.calls.waits).toHaveLength(20);
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });

  it('budget 0 disables waiting: no waitFor, no probes, straight to the fallback', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 } },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    await f.clock.run(f.router.monitor.refreshPrimary());
    const probesBefore = f.adapter.calls.probes.length;
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.target).toBe('primary');
    expect(decision.reason).toBe('primary-fallback');
    expect(decision.waitedMs).toBe(0);
    expect(f.adapter.calls.waits).toEqual([]);
    expect(f.adapter.calls.probes.length).toBe(probesBefore);
    expect(f.router.metrics().waits).toBe(0);
  });
});

describe('primary fallback and degraded mode', () => {
  it('falls back to the primary under the cap when no replica catches up in time', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 50 } },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    const session = sessionAt('1.12');
    const { decision, value } = await f.read(session);
    expect(decision).toEqual({
      cluster: 'default',
      target: 'primary',
      reason: 'primary-fallback',
      waitedMs: 50,
      stale: false,
      retried: false,
    });
    expect(value).toBe('read on primary');
    expect(f.adapter.readTargets()).toEqual(['primary']);
    expect(f.events.wait[0]?.reached).toBe(false);
    const metrics = f.router.metrics();
    expect(metrics.primaryReads).toBe(1);
    expect(metrics.waits).toBe(1);
    expect(metrics.waitsReached).toBe(0);
    expect(metrics.byReason['primary-fallback']).toBe(1);
  });

  it('sends a token read to the primary (primary-no-replica) when no replica is healthy', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.setAll({ reachable: false });
      },
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.target).toBe('primary');
    expect(decision.reason).toBe('primary-no-replica');
    expect(f.adapter.calls.waits).toEqual([]);
  });

  async function capExhausted(degraded: 'error' | 'stale') {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 }, fallback: { burst: 1, ratePerSecond: 0 }, degraded },
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.replica('r1').lagSeconds = 2;
        a.replica('r2').lagSeconds = 3;
      },
    });
    const first = await f.read(sessionAt('1.12'));
    expect(first.decision.reason).toBe('primary-fallback');
    return f;
  }

  it("cap exhausted, degraded 'error': throws a retryable ReplicasBehindError with an ETA from lag", async () => {
    const f = await capExhausted('error');
    const error = await f.read(sessionAt('1.12')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReplicasBehindError);
    const behind = error as ReplicasBehindError;
    expect(behind.code).toBe(ErrorCode.ReplicasBehind);
    expect(behind.code).toBe('TIDEMARK_REPLICAS_BEHIND');
    expect(behind.retryable).toBe(true);
    expect(behind.etaMs).toBe(2000);
    expect(behind.cluster).toBe('default');
    expect(behind.message).toContain('about 2000 ms');
    expect(f.adapter.readTargets()).toEqual(['primary']);
    expect(f.events.capRejected).toEqual([{ cluster: 'default', waitedMs: 0 }]);
    const metrics = f.router.metrics();
    expect(metrics.capRejections).toBe(1);
    expect(metrics.reads).toBe(1);
  });

  it('ETA ignores paused and unreachable replicas, and is unknown without lag figures', async () => {
    const f = await capExhausted('error');
    f.adapter.replica('r1').paused = true;
    f.adapter.replica('r1').lagSeconds = 0.5;
    await f.clock.run(f.router.monitor.refresh());
    let error = (await f.read(sessionAt('1.12')).catch((e: unknown) => e)) as ReplicasBehindError;
    expect(error.etaMs).toBe(3000);
    f.adapter.replica('r2').reachable = false;
    await f.clock.run(f.router.monitor.refresh());
    error = (await f.read(sessionAt('1.12')).catch((e: unknown) => e)) as ReplicasBehindError;
    expect(error).toBeInstanceOf(ReplicasBehindError);
    expect(error.etaMs).toBeUndefined();
    expect(error.message).toContain('ETA unknown');
  });

  it("cap exhausted, degraded 'stale': serves the least-lagged replica, marked stale", async () => {
    const f = await capExhausted('stale');
    const session = sessionAt('1.12');
    const { decision } = await f.read(session);
    expect(decision).toMatchObject({ target: 'r1', reason: 'degraded-stale', stale: true });
    expect(f.adapter.readTargets()).toEqual(['primary', 'r1']);
    const metrics = f.router.metrics();
    expect(metrics.staleReads).toBe(1);
    expect(metrics.capRejections).toBe(1);
    expect(metrics.byReason['degraded-stale']).toBe(1);
    // A stale read never lowers the session.
    expect(session.positionText('default')).toBe('1.12');
  });

  it("degraded 'stale' still throws when no replica is reachable", async () => {
    const f = await capExhausted('stale');
    f.adapter.setAll({ reachable: false });
    await f.clock.run(f.router.monitor.refresh());
    await expect(f.read(sessionAt('1.12'))).rejects.toBeInstanceOf(ReplicasBehindError);
  });

  it('fallback disabled: never reads the primary, degrades at once', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 }, fallback: { enabled: false } },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    await expect(f.read(sessionAt('1.12'))).rejects.toMatchObject({
      code: 'TIDEMARK_REPLICAS_BEHIND',
    });
    expect(f.adapter.readTargets()).toEqual([]);
    expect(f.router.metrics().capRejections).toBe(1);
  });

  it("fallback disabled with degraded 'stale': serves a replica marked stale", async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 }, fallback: { enabled: false }, degraded: 'stale' },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.reason).toBe('degraded-stale');
    expect(decision.stale).toBe(true);
    expect(f.adapter.readTargets()).not.toContain('primary');
  });

  it('the fallback bucket refills at ratePerSecond and never holds more than burst', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 }, fallback: { burst: 2, ratePerSecond: 10 } },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    const targets = async (reads: number) => {
      const result: string[] = [];
      for (let i = 0; i < reads; i++) {
        result.push(
          await f.read(sessionAt('1.12')).then(
            (r) => r.decision.target,
            (e: { code?: string }) => e.code ?? 'error',
          ),
        );
      }
      return result;
    };
    const primaryOrRejected = ['primary', 'primary', 'TIDEMARK_REPLICAS_BEHIND'];
    expect(await targets(3)).toEqual(primaryOrRejected);
    await f.clock.advance(99);
    expect(await targets(1)).toEqual(['TIDEMARK_REPLICAS_BEHIND']);
    await f.clock.advance(1);
    expect(await targets(2)).toEqual(['primary', 'TIDEMARK_REPLICAS_BEHIND']);
    // A long quiet spell refills only up to burst.
    await f.clock.advance(60_000);
    expect(await targets(3)).toEqual(primaryOrRejected);
    expect(f.router.metrics().capRejections).toBe(4);
  });
});
