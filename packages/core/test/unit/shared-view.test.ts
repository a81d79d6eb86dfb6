/**
 * The shared replica view on core's scripted adapter and an in-process simulator of the store
 * (fake timers and Date). The Redis channel, real servers and separate processes are tested in
 * @tidemark/redis.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isHealthy } from '../../src/adapter-kit/index.js';
import {
  type Clock,
  ConfigError,
  Router,
  type SharedViewRole,
  systemClock,
} from '../../src/index.js';
import { MemoryViewStore } from '../support/memory-view-channel.js';
import { cpText, ScriptedAdapter } from '../support/scripted-adapter.js';

const REPLICAS = ['r1', 'r2'];
const INTERVAL = 200;
const HEALTH = { maxSampleAgeMs: 1000, maxLagSeconds: 10 };

/** Monotonic clock on the faked Date, so the monitor's clock and the timers agree. */
const dateClock: Clock = { now: () => Date.now(), sleep: systemClock.sleep };

const routers: Array<Router<unknown, unknown>> = [];
let fleets = 0;
afterEach(async () => {
  for (const router of routers.splice(0)) await router.close();
  vi.useRealTimers();
});

interface Instance {
  router: Router<unknown, unknown>;
  adapter: ScriptedAdapter;
  channel: ReturnType<MemoryViewStore['channel']>;
  roles: SharedViewRole[];
  /** Background and on-demand probes this instance sent to replica `id` so far. */
  probes(id: string): number;
}

/** `n` app instances of one cluster: each its own router, adapter (connections) and channel. */
function fleet(n: number, store = new MemoryViewStore()) {
  const instances: Instance[] = [];
  const name = `fleet${++fleets}`;
  for (let i = 0; i < n; i++) {
    const adapter = new ScriptedAdapter({ replicas: REPLICAS, clock: dateClock });
    const channel = store.channel();
    const router = new Router({
      adapter,
      cluster: 'shop',
      clock: dateClock,
      health: HEALTH,
      monitorOptions: { intervalMs: INTERVAL },
      sharedView: { channel, owner: `${name}-app${i}` },
    }) as unknown as Router<unknown, unknown>;
    routers.push(router);
    const roles: SharedViewRole[] = [];
    router.events.on('shared-view', (e) => roles.push(e.role));
    instances.push({
      router,
      adapter,
      channel,
      roles,
      probes: (id) => adapter.probeCount(id),
    });
  }
  /** The replicas are the same servers for every instance: move them all at once. */
  const applyEverywhere = (seq: number) => {
    for (const { adapter } of instances) {
      adapter.primary.position = { history: 1, seq };
      adapter.setAll({ applied: { history: 1, seq } });
    }
  };
  const probers = () => instances.filter((i) => i.router.sharedView?.role() === 'prober');
  return { store, instances, applyEverywhere, probers };
}

describe('one prober for many instances', () => {
  it('elects one prober; the others stop probing and follow its samples', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { instances, applyEverywhere, probers } = fleet(4);
    await vi.advanceTimersByTimeAsync(1000);
    expect(probers()).toHaveLength(1);
    const prober = probers()[0]!;
    const before = instances.map((i) => i.probes('r1'));
    await vi.advanceTimersByTimeAsync(10_000);
    const during = instances.map((i, k) => i.probes('r1') - before[k]!);
    for (const [k, count] of during.entries()) {
      if (instances[k] === prober) expect(count).toBeGreaterThanOrEqual(45);
      else expect(count).toBe(0);
    }
    // Followers see what the prober saw, at the age it had.
    applyEverywhere(50);
    await vi.advanceTimersByTimeAsync(INTERVAL + 10);
    for (const { router } of instances) {
      const state = router.monitor.state('r2')!;
      expect(cpText(state.applied as never)).toBe('1.50');
      expect(isHealthy(state, Date.now(), HEALTH)).toBe(true);
      expect(cpText(router.monitor.primaryPosition() as never)).toBe('1.50');
    }
    const follower = instances.find((i) => i !== prober)!;
    expect(follower.router.metrics().sharedView).toMatchObject({
      role: 'follower',
      samplesRejected: 0,
    });
    expect(follower.router.metrics().sharedView!.samplesReceived).toBeGreaterThan(100);
    expect(prober.router.metrics().sharedView!.samplesPublished).toBeGreaterThan(100);
  });

  it('control: without a shared view every instance probes every replica', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const adapters = [0, 1, 2, 3].map(
      () => new ScriptedAdapter({ replicas: REPLICAS, clock: dateClock }),
    );
    for (const adapter of adapters) {
      routers.push(
        new Router({
          adapter,
          clock: dateClock,
          monitorOptions: { intervalMs: INTERVAL },
        }) as unknown as Router<unknown, unknown>,
      );
    }
    await vi.advanceTimersByTimeAsync(10_000);
    for (const adapter of adapters) expect(adapter.probeCount('r1')).toBeGreaterThanOrEqual(45);
  });

  it('a dead prober: followers probe locally while its feed is silent, one takes over within the lease', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { instances, probers } = fleet(3);
    await vi.advanceTimersByTimeAsync(1000);
    const dead = probers()[0]!;
    const others = instances.filter((i) => i !== dead);
    // Cut off: its lease renewals and samples never arrive (a crashed or partitioned process).
    dead.channel.cut = true;
    const cutAt = Date.now();
    let newProberAt: number | undefined;
    for (let t = 0; t < 6000; t += 50) {
      await vi.advanceTimersByTimeAsync(50);
      // No follower's view ever ages out of routing.
      for (const { router } of others) {
        for (const id of REPLICAS) {
          expect(isHealthy(router.monitor.state(id)!, Date.now(), HEALTH)).toBe(true);
        }
      }
      if (
        newProberAt === undefined &&
        others.some((i) => i.router.sharedView?.role() === 'prober')
      ) {
        newProberAt = Date.now();
      }
    }
    expect(newProberAt).toBeDefined();
    // Lease 2000 ms, renewed (or tried) every 500 ms.
    expect(newProberAt! - cutAt).toBeLessThanOrEqual(2000 + 500 + 50);
    const takers = others.filter((i) => i.router.sharedView?.role() === 'prober');
    expect(takers).toHaveLength(1);
    // Settled again: only the new prober probes.
    const before = others.map((i) => i.probes('r1'));
    await vi.advanceTimersByTimeAsync(4000);
    const counts = others.map((i, k) => i.probes('r1') - before[k]!);
    expect(counts.filter((c) => c > 0)).toHaveLength(1);
  });
});

describe('the channel fails', () => {
  it('store down: every instance probes on its own (role local, with an event); back up: one prober again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { store, instances, probers } = fleet(3);
    await vi.advanceTimersByTimeAsync(1000);
    expect(probers()).toHaveLength(1);
    store.down = true;
    await vi.advanceTimersByTimeAsync(1000);
    for (const instance of instances) {
      expect(instance.router.sharedView?.role()).toBe('local');
      expect(instance.roles.at(-1)).toBe('local');
      expect(instance.router.metrics().sharedView!.channelErrors).toBeGreaterThan(0);
    }
    const before = instances.map((i) => i.probes('r1'));
    await vi.advanceTimersByTimeAsync(2000);
    for (const [k, instance] of instances.entries()) {
      expect(instance.probes('r1') - before[k]!).toBeGreaterThanOrEqual(9);
    }
    store.down = false;
    await vi.advanceTimersByTimeAsync(3000);
    expect(probers()).toHaveLength(1);
    expect(instances.filter((i) => i.router.sharedView?.role() === 'follower')).toHaveLength(2);
  });

  it('a hanging store counts as down after the call timeout', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { instances } = fleet(1);
    instances[0]!.channel.cut = true;
    await vi.advanceTimersByTimeAsync(1500);
    expect(instances[0]!.router.sharedView?.role()).toBe('local');
    expect(instances[0]!.probes('r1')).toBeGreaterThanOrEqual(5);
  });
});

describe('what the channel carries', () => {
  it('rejects forged, malformed and oversized samples and keeps the view unchanged', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { store, instances, probers } = fleet(2);
    await vi.advanceTimersByTimeAsync(1000);
    const follower = instances.find((i) => i !== probers()[0])!;
    const scope = 'tidemark:view:shop';
    const base = { v: 1, o: 'intruder', a: 0, w: Date.now() };
    const bad = [
      'not json',
      JSON.stringify(null),
      JSON.stringify({ ...base, v: 2, n: 'r1', p: '1.900' }),
      JSON.stringify({ ...base, n: 'r9', p: '1.900' }),
      JSON.stringify({ ...base, n: 'r1', p: 'DROP TABLE' }),
      JSON.stringify({ ...base, n: 'r1', p: 1900 }),
      JSON.stringify({ ...base, a: -5, n: 'r1', p: '1.900' }),
      JSON.stringify({ ...base, n: 'r1', p: '1.900', ls: 'soon' }),
      JSON.stringify({ ...base, n: 'primary' }),
      JSON.stringify({ ...base, n: 'r1', p: '1.900', pad: 'x'.repeat(300_000) }),
    ];
    const rejectedBefore = follower.router.metrics().sharedView!.samplesRejected;
    for (const message of bad) store.deliver(scope, message);
    expect(follower.router.metrics().sharedView!.samplesRejected - rejectedBefore).toBe(bad.length);
    expect(cpText(follower.router.monitor.state('r1')!.applied as never)).toBe('1.10');
    // Positive control: a well-formed sample is taken.
    store.deliver(scope, JSON.stringify({ ...base, n: 'r1', p: '1.12' }));
    expect(cpText(follower.router.monitor.state('r1')!.applied as never)).toBe('1.12');
  });

  it('a sample is as old as it was when probed: a delayed one does not look fresh', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { store, instances, probers } = fleet(2);
    await vi.advanceTimersByTimeAsync(1000);
    const follower = instances.find((i) => i !== probers()[0])!;
    // Probed 3 s ago (its age at publication), published 400 ms ago (transit).
    store.deliver(
      'tidemark:view:shop',
      JSON.stringify({ v: 1, o: 'x', n: 'r1', p: '1.30', a: 3000, w: Date.now() - 400 }),
    );
    const state = follower.router.monitor.state('r1')!;
    // A newer local sample is kept; the old one only raised the position.
    expect(cpText(state.applied as never)).toBe('1.30');
    expect(Date.now() - state.sampledAt).toBeLessThan(1000);
    // On a fresh replica view the same sample sets the age.
    const fresh = fleet(1, store);
    const instance = fresh.instances[0]!;
    instance.adapter.replica('r2').reachable = false;
    await vi.advanceTimersByTimeAsync(1);
    store.deliver(
      'tidemark:view:shop',
      JSON.stringify({ v: 1, o: 'x', n: 'r2', p: '1.30', a: 3000, w: Date.now() - 400 }),
    );
    const aged = instance.router.monitor.state('r2')!;
    expect(Date.now() - aged.sampledAt).toBeGreaterThanOrEqual(3400);
    expect(isHealthy(aged, Date.now(), HEALTH)).toBe(false);
  });
});

describe('configuration', () => {
  it('refuses a shared view with a custom monitor, and bad timings', () => {
    const store = new MemoryViewStore();
    const adapter = new ScriptedAdapter({ replicas: REPLICAS });
    const plain = new Router({ adapter });
    routers.push(plain as unknown as Router<unknown, unknown>);
    const monitor = plain.monitor;
    expect(
      () => new Router({ adapter, monitor, sharedView: { channel: store.channel() } }),
    ).toThrow(ConfigError);
    expect(
      () => new Router({ adapter, sharedView: { channel: store.channel(), leaseMs: 0 } }),
    ).toThrow(/leaseMs/);
    expect(() => new Router({ adapter, sharedView: { channel: {} as never } })).toThrow(
      /ReplicaViewChannel/,
    );
  });
});
