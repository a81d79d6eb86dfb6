/**
 * Waiting on several candidates through the router's shared catch-up watchers (catch-up.ts): one
 * watcher per replica, however many reads wait; a read is served by whichever candidate applies
 * its position first, or goes down the ladder at its deadline. Counted in probes and server-side
 * waits on the virtual clock (fixture) and on the replication simulator.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PollingMonitor } from '../../src/adapter-kit/index.js';
import { CatchUpWatchers, type CatchUpWatchersOptions } from '../../src/catch-up.js';
import { Router, Session, systemClock } from '../../src/index.js';
import type { CounterPosition } from '../support/counter-codec.js';
import { cp, cpText, ScriptedAdapter } from '../support/scripted-adapter.js';
import {
  ReplicationSimulator,
  type SimConnection,
  SimulatedAdapter,
  simulatedMonitor,
} from '../support/simulator.js';
import { FakeClock } from './helpers/fake-clock.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

describe('waiting on several candidates', () => {
  /** Both replicas at 1.10, the primary at 1.12; r1 looks best (least lagged), r2 lags more. */
  const bestLooksFirst = (adapter?: NonNullable<Parameters<typeof routerFixture>[0]>['adapter']) =>
    routerFixture({
      ...(adapter ? { adapter } : {}),
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.setAll({ applied: cp('1.10') });
        a.replica('r1').lagSeconds = 0.1;
        a.replica('r2').lagSeconds = 2;
      },
    });
  it('the least lagged replica stalls, another catches up after 30 ms: replica-waited there', async () => {
    const f = await bestLooksFirst();
    f.clock.at(30, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision).toMatchObject({ target: 'r2', reason: 'replica-waited', waitedMs: 30 });
    // One server-side wait, on the replica that looked best; r2 was watched through probes.
    expect(f.adapter.calls.waits.map((w) => w.replica)).toEqual(['r1']);
    // The control: r1 never got the position, so a wait on it alone would have spent the budget.
    expect(cpText(f.adapter.replica('r1').applied)).toBe('1.10');
    expect(f.events.wait).toEqual([
      expect.objectContaining({ replica: 'r2', reached: true, serverSide: true }),
    ]);
    // The server-side wait on r1 is left to end on the server (cancelling it would cost its
    // connection): not aborted, and bounded by its own timeout, after which nothing is pending.
    const leftRunning = f.adapter.calls.waits[0]!;
    expect(leftRunning.signal.aborted).toBe(false);
    await f.clock.advance(leftRunning.timeoutMs);
    expect(leftRunning.signal.aborted).toBe(false);
    expect(f.clock.pendingSleeps()).toBe(0);
  });

  it('a wait left running after its waiter was served elsewhere updates the view when it ends', async () => {
    const f = await bestLooksFirst();
    f.clock.at(30, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    f.clock.at(45, () => {
      f.adapter.replica('r1').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision).toMatchObject({ target: 'r2', reason: 'replica-waited', waitedMs: 30 });
    await f.clock.advance(20);
    expect(f.adapter.calls.waits).toHaveLength(1);
    expect(f.adapter.calls.waits[0]?.signal.aborted).toBe(false);
    // r1's own answer, not a probe, raised the router's view of it.
    const probesOfR1 = f.adapter.calls.probes.filter((p) => p.target === 'r1').length;
    expect(cpText(f.router.monitor.state('r1')!.applied!)).toBe('1.12');
    expect(f.adapter.calls.probes.filter((p) => p.target === 'r1').length).toBe(probesOfR1);
  });

  it('a wait left running that the server never answers is cancelled a second after its timeout', async () => {
    // A partitioned server: the wait answers nothing until it is aborted.
    const f = await bestLooksFirst({
      waitBehaviour: (call) =>
        new Promise((_, reject) => {
          call.signal.addEventListener('abort', () => reject(call.signal.reason), { once: true });
        }),
    });
    f.clock.at(30, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision).toMatchObject({ target: 'r2', reason: 'replica-waited' });
    const wait = f.adapter.calls.waits[0]!;
    await f.clock.advance(wait.timeoutMs - 30 + 999);
    expect(wait.signal.aborted).toBe(false);
    await f.clock.advance(2);
    expect(wait.signal.aborted).toBe(true);
    expect(f.clock.pendingSleeps()).toBe(0);
  });

  it('close cancels a wait left running', async () => {
    const f = await bestLooksFirst();
    f.clock.at(30, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    await f.read(sessionAt('1.12'));
    expect(f.adapter.calls.waits[0]?.signal.aborted).toBe(false);
    await f.router.close();
    expect(f.adapter.calls.waits[0]?.signal.aborted).toBe(true);
  });

  it('the server-side wait still wins when the best replica is the one that catches up', async () => {
    const f = await bestLooksFirst();
    f.clock.at(20, () => {
      f.adapter.replica('r1').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision).toMatchObject({ target: 'r1', reason: 'replica-waited', waitedMs: 20 });
  });

  it('no candidate catches up: the deadline sends the read down the ladder (primary fallback)', async () => {
    const f = await routerFixture({
      replicas: ['r1', 'r2', 'r3'],
      adapter: { serverSideWait: false },
      router: { wait: { budgetMs: 40 } },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision).toMatchObject({ target: 'primary', reason: 'primary-fallback', waitedMs: 40 });
    expect(f.events.wait).toEqual([expect.objectContaining({ reached: false, waitedMs: 40 })]);
    // Every watcher stopped with its last waiter: no sleep is left behind.
    expect(f.clock.pendingSleeps()).toBe(0);
  });

  it('with an adapter that offers observe, a catch-up watches the position alone', async () => {
    const f = await routerFixture({
      adapter: { serverSideWait: false, observe: true },
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.setAll({ applied: cp('1.10') });
      },
    });
    f.clock.at(6, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    const probesBefore = f.adapter.calls.probes.filter((p) => p.target !== 'primary').length;
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision).toMatchObject({ target: 'r2', reason: 'replica-waited' });
    // The watchers observed every millisecond; no full replica probe was sent for the wait.
    expect(f.adapter.calls.observes.length).toBeGreaterThanOrEqual(6);
    expect(f.adapter.calls.probes.filter((p) => p.target !== 'primary').length).toBe(probesBefore);
  });

  it("the caller's abort ends the wait on every candidate at once", async () => {
    const f = await routerFixture({
      adapter: { serverSideWait: false },
      configure: (a) => (a.primary.position = cp('1.12')),
    });
    const controller = new AbortController();
    f.clock.at(20, () => controller.abort());
    const read = f.router.readDetailed(sessionAt('1.12'), async () => 'x', {
      signal: controller.signal,
    });
    const { decision } = await f.clock.run(read);
    expect(decision.waitedMs).toBe(20);
    const probesAfter = f.adapter.calls.probes.length;
    await f.clock.advance(100);
    expect(f.adapter.calls.probes.length).toBe(probesAfter);
    expect(f.clock.pendingSleeps()).toBe(0);
  });
});

describe('one watcher per replica, not one probe loop per read', () => {
  /**
   * `reads` concurrent reads, each one write behind on two replicas that both apply it after
   * `catchUpMs`; returns the replica probes sent meanwhile.
   */
  async function probesFor(reads: number, catchUpMs: number): Promise<number> {
    const f = await routerFixture({
      adapter: { serverSideWait: false },
      configure: (a) => (a.primary.position = cp('1.12')),
    });
    f.clock.at(catchUpMs, () => f.adapter.setAll({ applied: cp('1.12') }));
    const before = f.adapter.calls.probes.filter((p) => p.target !== 'primary').length;
    const all = Array.from({ length: reads }, () =>
      f.router.readDetailed(sessionAt('1.12'), async () => 'x'),
    );
    const results = await f.clock.run(Promise.all(all));
    for (const { decision } of results) {
      expect(decision).toMatchObject({ reason: 'replica-waited', waitedMs: catchUpMs });
    }
    expect(f.clock.pendingSleeps()).toBe(0);
    return f.adapter.calls.probes.filter((p) => p.target !== 'primary').length - before;
  }

  /** The reverted design, as a control: each read runs its own 1 ms probe loop over its candidates. */
  async function perReadLoopProbes(reads: number, catchUpMs: number): Promise<number> {
    const clock = new FakeClock();
    const adapter = new ScriptedAdapter({ replicas: ['r1', 'r2'], clock });
    clock.at(catchUpMs, () => adapter.setAll({ applied: cp('1.12') }));
    const loop = async () => {
      for (;;) {
        const probed = await Promise.all(
          adapter.replicas.map((id) =>
            adapter.probe(id, { signal: new AbortController().signal, primary: undefined }),
          ),
        );
        if (probed.some((p) => p.applied.seq >= 12)) return;
        await clock.sleep(1);
      }
    };
    await clock.run(Promise.all(Array.from({ length: reads }, loop)));
    return adapter.calls.probes.length;
  }

  it('probes grow with replicas x catch-up time, not with waiting reads', async () => {
    const one = await probesFor(1, 50);
    const many = await probesFor(200, 50);
    // Two replicas, one probe each per millisecond of waiting (the first right away).
    expect(one).toBe(2 * 51);
    expect(many).toBe(one);
    // The control: 200 reads with a probe loop each send 200 times as many.
    const control = await perReadLoopProbes(200, 50);
    expect(control).toBe(200 * 2 * 51);
  });

  it('reads that wait on one replica share one server-side wait', async () => {
    const f = await routerFixture({
      replicas: ['r1'],
      configure: (a) => (a.primary.position = cp('1.12')),
    });
    f.clock.at(30, () => (f.adapter.replica('r1').applied = cp('1.12')));
    const all = Array.from({ length: 10 }, () =>
      f.router.readDetailed(sessionAt('1.12'), async () => 'x'),
    );
    const results = await f.clock.run(Promise.all(all));
    expect(results.map((r) => r.decision.target)).toEqual(Array(10).fill('r1'));
    expect(f.adapter.calls.waits).toHaveLength(1);
    expect(f.events.wait.every((e) => e.serverSide && e.reached && e.waitedMs === 30)).toBe(true);
  });

  it('a server-side wait is for the lowest position: a lower one arriving re-plans it', async () => {
    const f = await routerFixture({
      replicas: ['r1'],
      configure: (a) => (a.primary.position = cp('1.14')),
    });
    const r1 = f.adapter.replica('r1');
    const high = f.router.readDetailed(sessionAt('1.14'), async () => 'x');
    let low: ReturnType<typeof f.router.readDetailed> | undefined;
    f.clock.at(5, () => {
      low = f.router.readDetailed(sessionAt('1.12'), async () => 'x');
    });
    f.clock.at(10, () => (r1.applied = cp('1.12')));
    f.clock.at(20, () => (r1.applied = cp('1.14')));
    const highDecision = (await f.clock.run(high)).decision;
    const lowDecision = (await f.clock.run(low!)).decision;
    expect(lowDecision).toMatchObject({ target: 'r1', reason: 'replica-waited', waitedMs: 5 });
    expect(highDecision).toMatchObject({ target: 'r1', reason: 'replica-waited', waitedMs: 20 });
    // 1.14, cancelled when 1.12 arrived; 1.12 until it was applied; then 1.14 again.
    expect(
      f.adapter.calls.waits.map((w) => [cpText(w.position), w.at - f.adapter.calls.waits[0]!.at]),
    ).toEqual([
      ['1.14', 0],
      ['1.12', 5],
      ['1.14', 10],
    ]);
    expect(f.adapter.calls.waits[0]?.signal.aborted).toBe(true);
    expect(f.clock.pendingSleeps()).toBe(0);
  });

  describe('probeBeforeWaitMs: fast probes first, the server-side wait only for longer waits', () => {
    async function caughtUpAt(ms: number, probeBeforeWaitMs: number | undefined) {
      const f = await routerFixture({
        replicas: ['r1'],
        configure: (a) => {
          a.primary.position = cp('1.12');
          if (probeBeforeWaitMs !== undefined) a.probeBeforeWaitMs = probeBeforeWaitMs;
        },
      });
      f.clock.at(ms, () => (f.adapter.replica('r1').applied = cp('1.12')));
      const before = f.adapter.probeCount('r1');
      const start = f.clock.now();
      const { decision } = await f.read(sessionAt('1.12'));
      const waitsAt = f.adapter.calls.waits.map((w) => w.at - start);
      return { f, decision, waitsAt, probes: f.adapter.probeCount('r1') - before };
    }

    it('a replica that applies the position within the window is found by probes: no server-side wait', async () => {
      const { f, decision, probes } = await caughtUpAt(3, 5);
      expect(decision).toMatchObject({ target: 'r1', reason: 'replica-waited', waitedMs: 3 });
      expect(f.adapter.calls.waits).toHaveLength(0);
      expect(probes).toBe(4); // at 0, 1, 2 and 3 ms
    });

    it('a longer wait probes for the window, then holds one server-side wait', async () => {
      const { decision, waitsAt, probes } = await caughtUpAt(30, 5);
      expect(decision).toMatchObject({ target: 'r1', reason: 'replica-waited', waitedMs: 30 });
      expect(waitsAt).toEqual([5]);
      expect(probes).toBe(5); // 0-4 ms, then the server waits
    });

    it('control: without the window the server waits at once and no probe runs', async () => {
      const { f, decision, probes } = await caughtUpAt(3, undefined);
      expect(decision).toMatchObject({ target: 'r1', reason: 'replica-waited', waitedMs: 3 });
      expect(f.adapter.calls.waits).toHaveLength(1);
      expect(probes).toBe(0);
    });
  });

  it('from 16 waiting reads on, the watcher probes instead of waiting on the server', async () => {
    const f = await routerFixture({
      replicas: ['r1'],
      configure: (a) => (a.primary.position = cp('1.12')),
    });
    f.clock.at(30, () => (f.adapter.replica('r1').applied = cp('1.12')));
    const before = f.adapter.probeCount('r1');
    const all = Array.from({ length: 40 }, () =>
      f.router.readDetailed(sessionAt('1.12'), async () => 'x'),
    );
    const results = await f.clock.run(Promise.all(all));
    expect(results.every((r) => r.decision.reason === 'replica-waited')).toBe(true);
    // The first 15 shared one server-side wait; the 16th cancelled it and probes took over.
    expect(f.adapter.calls.waits).toHaveLength(1);
    expect(f.adapter.calls.waits[0]?.signal.aborted).toBe(true);
    expect(f.adapter.probeCount('r1') - before).toBe(31);
  });

  it('on the replication simulator: 4 replicas, 1 vs 400 concurrent waits, probes stay flat', async () => {
    const run = async (reads: number) => {
      const simulator = new ReplicationSimulator({
        replicas: [1, 2, 3, 4].map((i) => ({ id: `r${i}`, lagMs: 10 * i })),
      });
      const adapter = new SimulatedAdapter(simulator, { serverSideWait: false });
      const clock = simulator.clock;
      const router = new Router<CounterPosition, SimConnection>({
        adapter,
        clock,
        // Background polling out of the way: the only probes are the watchers'.
        monitor: simulatedMonitor(adapter, 3_600_000),
      });
      const targets = await simulator.run(async () => {
        await router.ready();
        const session = new Session();
        await router.write(session, async (c) => c.insert('w'));
        const position = session.position(router.cluster, adapter.codec)!;
        const before = adapter.stats.probes;
        const decisions = await Promise.all(
          Array.from({ length: reads }, async () => {
            const s = new Session();
            s.raise(router.cluster, adapter.codec, position);
            return (await router.readDetailed(s, async (c) => c.sees('w'))).decision;
          }),
        );
        return { decisions, probes: adapter.stats.probes - before };
      });
      await router.close();
      return targets;
    };
    const one = await run(1);
    const many = await run(400);
    for (const d of [...one.decisions, ...many.decisions]) {
      // r1 (10 ms of lag) applies the write first and serves every read.
      expect(d).toMatchObject({ target: 'r1', reason: 'replica-waited', waitedMs: 10 });
    }
    // One probe per replica per millisecond while anyone waits: 4 x 11.
    expect(one.probes).toBe(44);
    expect(many.probes).toBe(one.probes);
  });
});

describe('watchers stop', () => {
  it('router.close() ends waits in progress and stops every watcher', async () => {
    const f = await routerFixture({
      adapter: { serverSideWait: false },
      configure: (a) => (a.primary.position = cp('1.12')),
    });
    const read = f.router.readDetailed(sessionAt('1.12'), async () => 'x');
    const outcome = read.then(
      (r) => r.decision.reason,
      (error: unknown) => (error as Error).name,
    );
    await f.clock.advance(10);
    await f.router.close();
    await f.clock.advance(1);
    // The read left the wait at close (where it then goes is the closed router's business).
    expect(await outcome).toBeDefined();
    expect(f.events.wait).toEqual([expect.objectContaining({ reached: false, waitedMs: 10 })]);
    const probes = f.adapter.calls.probes.length;
    await f.clock.advance(100);
    expect(f.adapter.calls.probes.length).toBe(probes);
    expect(f.clock.pendingSleeps()).toBe(0);
  });

  it('a watcher on the system clock keeps one timer while a read waits (as its query would) and leaves none once closed', async () => {
    const adapter = new ScriptedAdapter({ replicas: ['r1'], serverSideWait: false });
    adapter.primary.position = cp('1.12');
    const monitor = new PollingMonitor<CounterPosition>({
      codec: adapter.codec,
      replicas: adapter.replicas,
      probe: (id, context) => adapter.probe(id, context),
    });
    const options: CatchUpWatchersOptions<CounterPosition> = {
      adapter,
      codec: adapter.codec,
      monitor,
      clock: systemClock,
      pollIntervalMs: 1,
    };
    const watchers = new CatchUpWatchers(options);
    // Every timer created meanwhile, live and ref'd ones counted (Node's Timeout objects say
    // `_destroyed` once they fired or were cleared).
    type Timer = ReturnType<typeof setTimeout> & { _destroyed?: boolean };
    const created: Timer[] = [];
    const original = globalThis.setTimeout;
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      const timer = original(...args) as Timer;
      created.push(timer);
      return timer;
    }) as typeof setTimeout;
    const keepingAlive = () => created.filter((t) => !t._destroyed && t.hasRef()).length;
    const pause = (ms: number) => new Promise((resolve) => original(resolve, ms));
    try {
      const wait = watchers.wait({
        required: cp('1.12'),
        replicas: ['r1'],
        serverSideOn: undefined,
        deadline: systemClock.now() + 60_000,
        signal: undefined,
      });
      await pause(50);
      // The watcher is probing (every millisecond): its pause and the deadline guard, no more
      // (not one timer per probe round left behind).
      expect(adapter.probeCount('r1')).toBeGreaterThan(1);
      expect(created.length).toBeGreaterThan(2);
      expect(keepingAlive()).toBeGreaterThan(0);
      expect(keepingAlive()).toBeLessThanOrEqual(2);
      watchers.close();
      expect(await wait).toMatchObject({ replica: undefined });
      const probes = adapter.probeCount('r1');
      await pause(20);
      expect(adapter.probeCount('r1')).toBe(probes);
      expect(keepingAlive()).toBe(0);
    } finally {
      globalThis.setTimeout = original;
    }
    await monitor.close();
  });
});
