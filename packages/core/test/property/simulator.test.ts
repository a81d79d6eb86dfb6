/**
 * The simulator itself must be honest, or the router properties check nothing real: replicas
 * apply in order, never ahead of the primary, never backwards, and apply on time when running;
 * crashed replicas fail; waits resolve when the entry is applied and time out otherwise.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PRIMARY } from '../../src/index.js';
import {
  ReplicationSimulator,
  SimulatedAdapter,
  SimulatedCrashError,
  VirtualClock,
} from '../support/simulator.js';

type Action =
  | { kind: 'commit' }
  | { kind: 'advance'; ms: number }
  | { kind: 'lag'; replica: number; lagMs: number }
  | { kind: 'pause'; replica: number }
  | { kind: 'resume'; replica: number }
  | { kind: 'crash'; replica: number }
  | { kind: 'restart'; replica: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Action>({ kind: 'commit' }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.nat(60) }) },
  fc.record({ kind: fc.constant('lag' as const), replica: fc.nat(2), lagMs: fc.nat(100) }),
  fc.record({ kind: fc.constant('pause' as const), replica: fc.nat(2) }),
  fc.record({ kind: fc.constant('resume' as const), replica: fc.nat(2) }),
  fc.record({ kind: fc.constant('crash' as const), replica: fc.nat(2) }),
  fc.record({ kind: fc.constant('restart' as const), replica: fc.nat(2) }),
);

describe('ReplicationSimulator', () => {
  it('applies in order, never ahead of the primary, never backwards, and on time', async () => {
    let samples = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(action, { maxLength: 60 }), async (actions) => {
        const sim = new ReplicationSimulator({
          replicas: [{ id: 'a' }, { id: 'b', lagMs: 10 }, { id: 'c', lagMs: 50 }],
        });
        const ids = sim.replicaIds;
        const commits: number[] = [];
        const lags = new Map(ids.map((id) => [id, sim.replica(id).lagMs]));
        const last = new Map(ids.map((id) => [id, 0]));
        const check = () => {
          const now = sim.clock.now();
          for (const id of ids) {
            const view = sim.replica(id);
            const applied = sim.appliedOn(id);
            samples++;
            expect(applied).toBeGreaterThanOrEqual(last.get(id)!);
            expect(applied).toBeLessThanOrEqual(sim.primarySeq());
            if (!view.paused && !view.crashed) {
              // Everything committed at least `lag` ago is applied (commit times are ordered).
              const due = commits.filter((t) => t + lags.get(id)! <= now).length;
              expect(applied).toBeGreaterThanOrEqual(due);
            }
            last.set(id, applied);
          }
        };
        await sim.run(async () => {
          for (const a of actions) {
            const id = ids[('replica' in a ? a.replica : 0) % ids.length]!;
            if (a.kind === 'commit') {
              sim.commit([]);
              commits.push(sim.clock.now());
            } else if (a.kind === 'advance') await sim.clock.sleep(a.ms);
            else if (a.kind === 'lag') {
              sim.setLag(id, a.lagMs);
              lags.set(id, a.lagMs);
            } else if (a.kind === 'pause') sim.pause(id);
            else if (a.kind === 'resume') sim.resume(id);
            else if (a.kind === 'crash') sim.crash(id);
            else sim.restart(id);
            check();
          }
        });
      }),
      { numRuns: 200 },
    );
    expect(samples).toBeGreaterThan(1000);
  });

  it('crashed replicas fail reads, probes and waits; a restart brings the applied state back', async () => {
    const sim = new ReplicationSimulator({ replicas: [{ id: 'r0', lagMs: 5 }] });
    const adapter = new SimulatedAdapter(sim);
    const signal = new AbortController().signal;
    await sim.run(async () => {
      await adapter.write(async (c) => c.insert('w1'), {});
      const wait = adapter.waitFor!('r0', sim.position(1), 100, { signal });
      expect(await wait).toEqual({ outcome: 'reached', applied: sim.position(1) });
      expect(sim.clock.now()).toBe(5);
      await adapter.write(async (c) => c.insert('w2'), {});
      const pending = adapter.waitFor!('r0', sim.position(2), 100, { signal });
      sim.crash('r0');
      await expect(pending).rejects.toBeInstanceOf(SimulatedCrashError);
      await expect(adapter.read('r0', async (c) => c.lastApplied(), {})).rejects.toBeInstanceOf(
        SimulatedCrashError,
      );
      await expect(adapter.probe('r0', { signal, primary: undefined })).rejects.toBeInstanceOf(
        SimulatedCrashError,
      );
      await sim.clock.sleep(50);
      sim.restart('r0');
      const read = await adapter.read('r0', async (c) => [c.sees('w1'), c.sees('w2')], {});
      expect(read).toEqual({ value: [true, true], observed: sim.position(2) });
    });
  });

  it('waits time out at their deadline; reads on the primary are read-only', async () => {
    const sim = new ReplicationSimulator({ replicas: [{ id: 'r0' }] });
    const adapter = new SimulatedAdapter(sim);
    const signal = new AbortController().signal;
    await sim.run(async () => {
      sim.pause('r0');
      await adapter.write(async () => undefined, {});
      expect(await adapter.waitFor!('r0', sim.position(1), 30, { signal })).toEqual({
        outcome: 'timeout',
      });
      expect(sim.clock.now()).toBe(30);
      expect((await adapter.probe('r0', { signal, primary: undefined })).paused).toBe(true);
      await expect(adapter.read(PRIMARY, async (c) => c.insert('x'), {})).rejects.toThrow(
        /read-only/,
      );
    });
  });

  it('the virtual clock wakes sleepers in deadline order and early on abort', async () => {
    const clock = new VirtualClock();
    const woke: string[] = [];
    const controller = new AbortController();
    void clock.sleep(20).then(() => woke.push('20'));
    void clock.sleep(10).then(() => woke.push('10'));
    void clock.sleep(10).then(() => woke.push('10b'));
    void clock.sleep(15, controller.signal).then(() => woke.push(`aborted@${clock.now()}`));
    controller.abort();
    await Promise.resolve();
    expect(clock.nextWakeAt()).toBe(10);
    clock.advanceTo(12);
    clock.wakeDue();
    await new Promise((resolve) => setImmediate(resolve));
    expect(woke).toEqual(['aborted@0', '10', '10b']);
    expect(() => clock.advanceTo(11)).toThrow(/back/);
  });
});
