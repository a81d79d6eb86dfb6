/**
 * CONTROL for the router properties: a naive router (round-robin over replicas, no tokens) on
 * the same kind of schedules must show stale reads. If fast-check could not find one, the
 * simulator would be too gentle and the router's passing properties would prove nothing.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { RunTally, runSchedule, type ScheduleResult } from './run-schedule.js';
import { type Schedule, scheduleArbitrary } from './schedule.js';

const SIDE_BY_SIDE = Number(process.env.TIDEMARK_CONTROL_SAMPLE ?? 200);

function readAnomalies(result: ScheduleResult) {
  return result.violations.filter(
    (v) => v.kind === 'read-your-writes' || v.kind === 'monotonic-reads',
  );
}

describe('CONTROL: naive round-robin router on the replication simulator', () => {
  const naive = new RunTally();
  const router = new RunTally();
  afterAll(() => {
    console.log(naive.summary(`naive router, side by side on ${SIDE_BY_SIDE} schedules`));
    console.log(router.summary(`core router, side by side on the same ${SIDE_BY_SIDE} schedules`));
  });

  it('fast-check finds a schedule where the naive router misses a write or reads back in time', async () => {
    const details = await fc.check(
      fc.asyncProperty(scheduleArbitrary(), async (schedule) => {
        const result = await runSchedule(schedule, 'naive');
        return readAnomalies(result).length === 0;
      }),
      { numRuns: 300 },
    );
    expect(details.failed).toBe(true);
    const counterexample = details.counterexample![0] as Schedule;
    const shrunk = readAnomalies(await runSchedule(counterexample, 'naive'));
    console.log(
      `[simulator] naive router counterexample after ${details.numRuns} run(s) and ${details.numShrinks} shrink(s): ${JSON.stringify(counterexample)}\n  -> ${shrunk.map((v) => `${v.kind}: ${v.detail}`).join('\n  -> ')}`,
    );
    expect(shrunk.length).toBeGreaterThan(0);
    // The same schedule is safe with the core router.
    expect((await runSchedule(counterexample, 'router')).violations).toEqual([]);
  });

  it('side by side on one fixed sample: the naive router violates often, the core router never', async () => {
    const schedules = fc.sample(scheduleArbitrary(), { numRuns: SIDE_BY_SIDE, seed: 20_240_601 });
    for (const schedule of schedules) {
      naive.add(await runSchedule(schedule, 'naive'));
      router.add(await runSchedule(schedule, 'router'));
    }
    expect(naive.violations['read-your-writes'] ?? 0).toBeGreaterThan(0);
    expect(naive.violations['monotonic-reads'] ?? 0).toBeGreaterThan(0);
    expect(naive.violatingSchedules).toBeGreaterThan(SIDE_BY_SIDE / 10);
    expect(router.violatingSchedules).toBe(0);
  });
});
