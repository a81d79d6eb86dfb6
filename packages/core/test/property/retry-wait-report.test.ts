/**
 * Regression (reporting only, no stale data): after a failed replica read the retry path once
 * passed the time already waited where the read's start time belongs, so ReplicasBehindError and
 * the 'cap-rejected' event reported the clock's absolute time as "waited".
 */
import { describe, expect, it } from 'vitest';
import { ReplicasBehindError, Router, Session } from '../../src/index.js';
import type { CounterPosition } from '../support/counter-codec.js';
import {
  ReplicationSimulator,
  type SimConnection,
  SimulatedAdapter,
  SimulatedPollingMonitor,
} from '../support/simulator.js';

describe('core Router retry path on the replication simulator', () => {
  it('reports the time this read waited, not the clock, when the retry hits the cap', async () => {
    const sim = new ReplicationSimulator({ replicas: [{ id: 'r0' }] });
    const adapter = new SimulatedAdapter(sim);
    const router = new Router<CounterPosition, SimConnection>({
      adapter,
      clock: sim.clock,
      // One probe at start-up, then the monitor keeps believing r0 is fine: the read finds out.
      monitor: SimulatedPollingMonitor.of(adapter, 100_000),
      health: { maxSampleAgeMs: 100_000 },
      wait: { budgetMs: 0 },
      fallback: { enabled: false },
    });
    const rejectedAfterMs: number[] = [];
    router.events.on('cap-rejected', (event) => rejectedAfterMs.push(event.waitedMs));
    const error = await sim.run(async () => {
      await router.ready();
      await sim.clock.sleep(5000);
      sim.crash('r0');
      const failure = await router
        .readDetailed(new Session(), async (c) => c.lastApplied())
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      await router.close();
      return failure;
    });
    expect(error).toBeInstanceOf(ReplicasBehindError);
    // The read started at 5000 ms and failed at once: it waited 0 ms, not 5000.
    expect(rejectedAfterMs).toEqual([0]);
    expect((error as Error).message).toContain('waited 0 ms');
  });
});
