import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  PollingMonitor,
  type PollingMonitorOptions,
  type ProbeContext,
} from '../../src/adapter-kit/index.js';
import { ConfigError, type ReplicaState } from '../../src/index.js';
import { type CounterPosition, counterCodec } from '../support/counter-codec.js';
import { cp, cpText, ScriptedAdapter } from '../support/scripted-adapter.js';
import { FakeClock, settle } from './helpers/fake-clock.js';

type MonitorOptions = Partial<Omit<PollingMonitorOptions<CounterPosition>, 'replicas'>>;

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A monitor over a scripted adapter's probes, with every monitor event recorded. */
function setup(options: MonitorOptions = {}, replicas: readonly string[] = ['r1']) {
  const clock = new FakeClock();
  const adapter = new ScriptedAdapter({
    replicas,
    clock,
    ...(options.codec ? { codec: options.codec } : {}),
  });
  const monitor = new PollingMonitor<CounterPosition>({
    codec: adapter.codec,
    replicas,
    probe: (id, context) => {
      // Date.now() is faked in the timer tests, so these are exact scheduling times.
      probeTimes.push({ id, at: Date.now() });
      return adapter.probe(id, context);
    },
    probePrimary: (context) => adapter.probePrimary(context),
    clock,
    ...options,
  });
  const probeTimes: Array<{ id: string; at: number }> = [];
  /** Milliseconds between consecutive probes of `id`. */
  const probeGaps = (id: string) => {
    const times = probeTimes.filter((p) => p.id === id).map((p) => p.at);
    return times.slice(1).map((t, i) => t - times[i]!);
  };
  const events = {
    state: [] as Array<ReplicaState<CounterPosition>>,
    reachability: [] as boolean[],
    history: [] as Array<{ id: string; previous: string; next: string }>,
    primary: [] as string[],
  };
  monitor.events.on('state', (s) => events.state.push(s));
  monitor.events.on('reachability', (s) => events.reachability.push(s.reachable));
  monitor.events.on('history-change', (e) =>
    events.history.push({ id: e.id, previous: cpText(e.previous)!, next: cpText(e.next)! }),
  );
  monitor.events.on('primary', (p) => events.primary.push(cpText(p)!));
  cleanups.push(async () => {
    adapter.releaseAll();
    await monitor.close();
  });
  return { clock, adapter, monitor, events, probeGaps };
}

const appliedText = (monitor: PollingMonitor<CounterPosition>, id = 'r1') =>
  cpText(monitor.state(id)?.applied);

describe('initial state and configuration', () => {
  it('starts every replica unsampled and unreachable, in configuration order', () => {
    const { monitor } = setup({}, ['r1', 'r2']);
    expect(monitor.states().map((s) => s.id)).toEqual(['r1', 'r2']);
    expect(monitor.state('r1')).toEqual({
      id: 'r1',
      reachable: false,
      applied: undefined,
      lagSeconds: undefined,
      lagBytes: undefined,
      paused: false,
      history: 'unknown',
      behindPrimarySince: undefined,
      sampledAt: Number.NEGATIVE_INFINITY,
      failures: 0,
      lastError: undefined,
    });
    expect(monitor.state('nope')).toBeUndefined();
    expect(monitor.primaryPosition()).toBeUndefined();
  });

  it.each([
    ['intervalMs', { intervalMs: 0 }],
    ['probeTimeoutMs', { probeTimeoutMs: -1 }],
    ['backoffInitialMs', { backoffInitialMs: Number.NaN }],
    ['backoffMaxMs', { backoffMaxMs: Number.POSITIVE_INFINITY }],
  ])('rejects a non-positive or non-finite %s with ConfigError', (name, options) => {
    expect(() => setup(options)).toThrow(ConfigError);
    expect(() => setup(options)).toThrow(name);
  });

  it('rejects duplicate replica ids', () => {
    const error = (() => {
      try {
        setup({}, ['r1', 'r1']);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('TIDEMARK_CONFIG');
  });
});

describe('samples', () => {
  it('records applied position, lag, paused flag and the time the probe was sent', async () => {
    const { adapter, monitor, clock } = setup();
    Object.assign(adapter.replica('r1'), { lagSeconds: 1.5, lagBytes: 4096, paused: true });
    const release = adapter.holdProbes('r1');
    const sentAt = clock.now();
    const refresh = monitor.refresh('r1');
    await clock.advance(250);
    release();
    await refresh;
    expect(monitor.state('r1')).toMatchObject({
      reachable: true,
      applied: cp('1.10'),
      lagSeconds: 1.5,
      lagBytes: 4096,
      paused: true,
      failures: 0,
      // The sample is as old as the probe, not as its answer.
      sampledAt: sentAt,
    });
  });

  it('never moves the applied position backwards when a probe reports less', async () => {
    const { adapter, monitor } = setup();
    await monitor.refresh('r1');
    Object.assign(adapter.replica('r1'), { applied: cp('1.8'), lagSeconds: 7 });
    await monitor.refresh('r1');
    expect(appliedText(monitor)).toBe('1.10');
    // The rest of the sample is still taken.
    expect(monitor.state('r1')?.lagSeconds).toBe(7);
  });

  it('ignores a late probe result that is behind what a read observed meanwhile', async () => {
    const { adapter, monitor } = setup();
    await monitor.refresh('r1');
    const release = adapter.holdProbes('r1');
    const refresh = monitor.refresh('r1');
    await settle();
    monitor.observe('r1', cp('1.12'));
    adapter.replica('r1').applied = cp('1.11');
    release();
    await refresh;
    expect(appliedText(monitor)).toBe('1.12');
  });

  it("adopts a sample from another history and emits 'history-change'", async () => {
    const { adapter, monitor, events } = setup({ codec: counterCodec(new Map([[2, 8]])) });
    adapter.replica('r1').applied = cp('1.12');
    await monitor.refresh('r1');
    adapter.replica('r1').applied = cp('2.9');
    await monitor.refresh('r1');
    expect(appliedText(monitor)).toBe('2.9');
    expect(events.history).toEqual([{ id: 'r1', previous: '1.12', next: '2.9' }]);
  });

  it('moving forward across a fork the replica was part of is not a history change', async () => {
    const { adapter, monitor, events } = setup({ codec: counterCodec(new Map([[2, 8]])) });
    adapter.replica('r1').applied = cp('1.7');
    await monitor.refresh('r1');
    adapter.replica('r1').applied = cp('2.9');
    await monitor.refresh('r1');
    expect(appliedText(monitor)).toBe('2.9');
    expect(events.history).toEqual([]);
  });

  it('hands the probe the latest primary position (for lag in bytes)', async () => {
    const { adapter, monitor } = setup();
    adapter.primary.position = cp('1.30');
    await monitor.refreshPrimary();
    await monitor.refresh('r1');
    expect(cpText(adapter.calls.probes.at(-1)?.primary)).toBe('1.30');
  });
});

describe('failures', () => {
  it('marks a replica unreachable when its probe times out, and aborts the probe', async () => {
    let seen: ProbeContext<CounterPosition> | undefined;
    let hang = false;
    const { monitor, events } = setup({
      probeTimeoutMs: 30,
      probe: (_id, context) => {
        seen = context;
        return hang ? new Promise(() => undefined) : Promise.resolve({ applied: cp('1.10') });
      },
    });
    await monitor.refresh('r1');
    expect(monitor.state('r1')?.reachable).toBe(true);
    hang = true;
    const started = performance.now();
    await monitor.refresh('r1');
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    const state = monitor.state('r1')!;
    expect(state.reachable).toBe(false);
    expect(state.failures).toBe(1);
    expect(String(state.lastError)).toContain('probe timed out after 30 ms');
    expect(seen?.signal.aborted).toBe(true);
    // The last good position is kept: it is still a lower bound of what the replica applied.
    expect(appliedText(monitor)).toBe('1.10');
    expect(events.reachability).toEqual([true, false]);
  });

  it('backs off exponentially while a replica fails, capped at backoffMaxMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { adapter, monitor, probeGaps } = setup({
      intervalMs: 1000,
      backoffInitialMs: 20,
      backoffMaxMs: 80,
    });
    adapter.replica('r1').reachable = false;
    monitor.start();
    await vi.advanceTimersByTimeAsync(500);
    expect(probeGaps('r1').slice(0, 6)).toEqual([20, 40, 80, 80, 80, 80]);
    expect(monitor.state('r1')?.failures).toBe(adapter.probeCount('r1'));
  });

  it('returns to the normal interval and clears failures once a probe succeeds', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { adapter, monitor, probeGaps } = setup({
      intervalMs: 1000,
      backoffInitialMs: 20,
      backoffMaxMs: 80,
    });
    adapter.replica('r1').reachable = false;
    monitor.start();
    await vi.advanceTimersByTimeAsync(70);
    expect(monitor.state('r1')?.failures).toBe(3);
    adapter.replica('r1').reachable = true;
    await vi.advanceTimersByTimeAsync(80);
    expect(monitor.state('r1')).toMatchObject({ reachable: true, failures: 0 });
    await vi.advanceTimersByTimeAsync(2500);
    // Failing: 20, 40; the success comes 80 ms later; then the normal 1000 ms interval.
    expect(probeGaps('r1')).toEqual([20, 40, 80, 1000, 1000]);
  });

  it('reportFailure marks the replica unreachable and re-probes it after the initial backoff', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { adapter, monitor, events } = setup({
      intervalMs: 1000,
      backoffInitialMs: 20,
      backoffMaxMs: 80,
    });
    monitor.start();
    await vi.advanceTimersByTimeAsync(1);
    expect(monitor.state('r1')?.reachable).toBe(true);
    const error = new Error('read failed: connection reset');
    monitor.reportFailure('r1', error);
    expect(monitor.state('r1')).toMatchObject({ reachable: false, failures: 1, lastError: error });
    expect(events.reachability).toEqual([true, false]);
    const probes = adapter.probeCount('r1');
    await vi.advanceTimersByTimeAsync(19);
    expect(adapter.probeCount('r1')).toBe(probes);
    await vi.advanceTimersByTimeAsync(1);
    expect(adapter.probeCount('r1')).toBe(probes + 1);
    expect(monitor.state('r1')?.reachable).toBe(true);
    expect(events.reachability).toEqual([true, false, true]);
  });

  it('reportFailure of an unknown replica is ignored', () => {
    const { monitor, events } = setup();
    monitor.reportFailure('nope', new Error('x'));
    expect(events.state).toEqual([]);
  });
});

describe('refresh', () => {
  it('refresh() probes every replica; refresh(id) only that one', async () => {
    const { adapter, monitor } = setup({}, ['r1', 'r2', 'r3']);
    await monitor.refresh();
    expect(adapter.calls.probes.map((p) => p.target).sort()).toEqual(['r1', 'r2', 'r3']);
    await monitor.refresh('r2');
    expect(adapter.probeCount('r2')).toBe(2);
    expect(adapter.probeCount('r1')).toBe(1);
  });

  it('concurrent refreshes of one replica share the probe in flight', async () => {
    const { adapter, monitor } = setup();
    const release = adapter.holdProbes('r1');
    const first = monitor.refresh('r1');
    const second = monitor.refresh('r1');
    release();
    await Promise.all([first, second]);
    expect(adapter.probeCount('r1')).toBe(1);
  });
});

describe('observe and the primary position', () => {
  it('observe only moves a replica forward, and ignores unknown ids', async () => {
    const { monitor, events } = setup();
    monitor.observe('r1', cp('1.12'));
    expect(appliedText(monitor)).toBe('1.12');
    monitor.observe('r1', cp('1.11'));
    expect(appliedText(monitor)).toBe('1.12');
    monitor.observe('r1', cp('1.13'));
    expect(appliedText(monitor)).toBe('1.13');
    monitor.observe('nope', cp('1.99'));
    expect(events.state.map((s) => cpText(s.applied))).toEqual(['1.12', '1.13']);
  });

  it('observePrimary only moves forward and emits primary on each change', () => {
    const { monitor, events } = setup();
    monitor.observePrimary(cp('1.12'));
    monitor.observePrimary(cp('1.11'));
    monitor.observePrimary(cp('1.12'));
    monitor.observePrimary(cp('1.14'));
    expect(cpText(monitor.primaryPosition())).toBe('1.14');
    expect(events.primary).toEqual(['1.12', '1.14']);
  });

  it('refreshPrimary probes the primary and never returns less than it already knew', async () => {
    const { adapter, monitor } = setup();
    monitor.observePrimary(cp('1.12'));
    adapter.primary.position = cp('1.11');
    expect(cpText(await monitor.refreshPrimary())).toBe('1.12');
    adapter.primary.position = cp('1.15');
    expect(cpText(await monitor.refreshPrimary())).toBe('1.15');
    expect(adapter.probeCount('primary')).toBe(2);
    adapter.primary.reachable = false;
    await expect(monitor.refreshPrimary()).rejects.toThrow('primary is unreachable');
  });

  it('refreshPrimary without a primary probe returns the position it was told', async () => {
    const monitor = new PollingMonitor<CounterPosition>({
      codec: counterCodec(),
      replicas: ['r1'],
      probe: async () => ({ applied: cp('1.1') }),
    });
    cleanups.push(() => monitor.close());
    expect(await monitor.refreshPrimary()).toBeUndefined();
    monitor.observePrimary(cp('1.4'));
    expect(cpText(await monitor.refreshPrimary())).toBe('1.4');
  });
});

describe('background polling and close', () => {
  it('start() probes every replica and the primary, then polls at intervalMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { adapter, monitor } = setup({ intervalMs: 100 }, ['r1', 'r2']);
    monitor.start();
    monitor.start();
    await vi.advanceTimersByTimeAsync(1);
    expect([
      adapter.probeCount('r1'),
      adapter.probeCount('r2'),
      adapter.probeCount('primary'),
    ]).toEqual([1, 1, 1]);
    await vi.advanceTimersByTimeAsync(100);
    expect([
      adapter.probeCount('r1'),
      adapter.probeCount('r2'),
      adapter.probeCount('primary'),
    ]).toEqual([2, 2, 2]);
  });

  it('close() stops every timer: no probe after close, and start() cannot restart it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { adapter, monitor } = setup({ intervalMs: 100, backoffInitialMs: 10 }, ['r1', 'r2']);
    monitor.start();
    await vi.advanceTimersByTimeAsync(1);
    monitor.reportFailure('r2', new Error('x'));
    await monitor.close();
    const probes = adapter.calls.probes.length;
    monitor.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(adapter.calls.probes.length).toBe(probes);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a probe that answers after close() does not change the state', async () => {
    const { adapter, monitor, events } = setup();
    await monitor.refresh('r1');
    const eventsBefore = events.state.length;
    const release = adapter.holdProbes('r1');
    const refresh = monitor.refresh('r1');
    const closed = monitor.close();
    adapter.replica('r1').applied = cp('1.20');
    release();
    await Promise.all([refresh, closed]);
    expect(appliedText(monitor)).toBe('1.10');
    expect(events.state.length).toBe(eventsBefore);
  });
});

describe('events', () => {
  it("emits 'state' on every change and 'reachability' only on transitions", async () => {
    const { adapter, monitor, events } = setup();
    await monitor.refresh('r1');
    await monitor.refresh('r1');
    expect(events.state).toHaveLength(2);
    expect(events.reachability).toEqual([true]);
    adapter.replica('r1').reachable = false;
    await monitor.refresh('r1');
    await monitor.refresh('r1');
    expect(events.state).toHaveLength(4);
    expect(events.reachability).toEqual([true, false]);
    expect(events.state.at(-1)?.failures).toBe(2);
  });

  it('a throwing listener does not break the monitor', async () => {
    const { monitor } = setup();
    monitor.events.on('state', () => {
      throw new Error('broken metrics hook');
    });
    await monitor.refresh('r1');
    expect(monitor.state('r1')?.reachable).toBe(true);
  });
});

describe('position-only observations (adapter observe)', () => {
  /** A monitor whose adapter offers `observe`; counts both kinds of calls per replica. */
  function withObserve(observe?: (id: string) => Promise<CounterPosition>) {
    const counts = { probes: 0, observes: 0 };
    let ref: ReturnType<typeof setup> | undefined;
    const made = setup({
      probe: (id, context) => {
        counts.probes++;
        return ref!.adapter.probe(id, context);
      },
      observe: async (id) => {
        counts.observes++;
        if (observe) return observe(id);
        return ref!.adapter.replica(id).applied;
      },
    });
    ref = made;
    return { ...made, counts };
  }

  it('settles a read from an observation, not a probe', async () => {
    const { adapter, monitor, counts } = withObserve();
    await monitor.refresh('r1');
    const ticket = monitor.ticket();
    adapter.replica('r1').applied = cp('1.15');
    counts.probes = 0;
    expect(cpText(await monitor.appliedAfter('r1', ticket))).toBe('1.15');
    expect(counts).toEqual({ probes: 0, observes: 1 });
    // The background sample keeps its time: an observation says nothing about pause or lag.
    expect(appliedText(monitor)).toBe('1.15');
  });

  it('one observation settles every read that finished before it was sent', async () => {
    const { adapter, monitor, counts } = withObserve();
    await monitor.refresh('r1');
    const ticket = monitor.ticket();
    adapter.replica('r1').applied = cp('1.12');
    const settled = await Promise.all([1, 2, 3].map(() => monitor.appliedAfter('r1', ticket)));
    expect(settled.map(cpText)).toEqual(['1.12', '1.12', '1.12']);
    expect(counts.observes).toBe(1);
  });

  it('a read that finished after the observation in flight was sent waits for it, then observes once more', async () => {
    let release: (() => void) | undefined;
    let gate: Promise<void> | undefined = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { adapter, monitor, counts } = withObserve(async (id) => {
      // What the server answers is its position when the query runs, not when the answer lands.
      const applied = adapter.replica(id).applied;
      const held = gate;
      gate = undefined;
      if (held) await held;
      return applied;
    });
    await monitor.refresh('r1');
    counts.probes = 0;
    const early = monitor.ticket();
    adapter.replica('r1').applied = cp('1.12');
    const first = monitor.appliedAfter('r1', early);
    // Another read ends while that observation is on its way: it must not be settled by it.
    await Promise.resolve();
    const late = monitor.ticket();
    adapter.replica('r1').applied = cp('1.14');
    const second = monitor.appliedAfter('r1', late);
    const third = monitor.appliedAfter('r1', late);
    release!();
    expect(cpText(await first)).toBe('1.12');
    expect(cpText(await second)).toBe('1.14');
    expect(cpText(await third)).toBe('1.14');
    // One more observation shared by both late reads, and no full probe.
    expect(counts).toEqual({ probes: 0, observes: 2 });
  });

  it('falls back to a full probe when the observation fails', async () => {
    const { adapter, monitor, counts } = withObserve(() =>
      Promise.reject(new Error('observation failed')),
    );
    await monitor.refresh('r1');
    const ticket = monitor.ticket();
    adapter.replica('r1').applied = cp('1.13');
    counts.probes = 0;
    expect(cpText(await monitor.appliedAfter('r1', ticket))).toBe('1.13');
    expect(counts).toEqual({ probes: 1, observes: 1 });
  });

  it('an observation from another history is left to a full probe', async () => {
    // History 2 forked from history 1 at 1.11: a replica now at 2.20 lost 1.12.
    const { adapter, monitor, counts } = withObserve(async () => cp('2.20'));
    await monitor.refresh('r1');
    adapter.replica('r1').applied = cp('1.12');
    await monitor.refresh('r1');
    const ticket = monitor.ticket();
    adapter.replica('r1').applied = cp('2.20');
    counts.probes = 0;
    const settled = await monitor.appliedAfter('r1', ticket);
    // The observation could not raise 1.12 to 2.20 (not covered): the probe decided.
    expect(counts).toEqual({ probes: 1, observes: 1 });
    expect(cpText(settled)).toBe('2.20');
  });

  it('refreshPosition observes when it can and probes otherwise', async () => {
    const { adapter, monitor, counts } = withObserve();
    // Not reachable yet (never probed): a full probe.
    await monitor.refreshPosition('r1');
    expect(counts).toEqual({ probes: 1, observes: 0 });
    adapter.replica('r1').applied = cp('1.14');
    await monitor.refreshPosition('r1');
    expect(counts).toEqual({ probes: 1, observes: 1 });
    expect(appliedText(monitor)).toBe('1.14');
  });

  it('without observe, appliedAfter probes as before', async () => {
    const { adapter, monitor } = setup();
    await monitor.refresh('r1');
    const probes = adapter.calls.probes.length;
    const ticket = monitor.ticket();
    adapter.replica('r1').applied = cp('1.16');
    expect(cpText(await monitor.appliedAfter('r1', ticket))).toBe('1.16');
    expect(adapter.calls.probes.length).toBe(probes + 1);
  });
});
