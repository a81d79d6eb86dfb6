/**
 * Leases on the replication simulator: the same generated schedules as the core router's
 * property test, with every read and write going through `router.acquire` and `release` (what a
 * driver-side integration does). Side by side on one fixed sample with the naive control, which
 * must violate, and with `router.read`, whose routing the read leases share.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { RunTally, runSchedule } from './run-schedule.js';
import { scheduleArbitrary } from './schedule.js';

const RUNS = Math.max(1, Math.floor(Number(process.env.TIDEMARK_PROPERTY_RUNS ?? 1000) / 4));
const SEED = process.env.TIDEMARK_PROPERTY_SEED;
const SIDE_BY_SIDE = 200;

describe('leases on the replication simulator', () => {
  const leases = new RunTally();
  const sample = { lease: new RunTally(), router: new RunTally(), naive: new RunTally() };
  afterAll(() => {
    console.log(leases.summary('leases, all settings'));
    for (const [name, tally] of Object.entries(sample)) {
      console.log(tally.summary(`${name}, side by side on the same ${SIDE_BY_SIDE} schedules`));
    }
  });

  it('never miss own writes, never read back in time', async () => {
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary(), async (schedule) => {
        const result = await runSchedule(schedule, 'lease');
        leases.add(result);
        expect(result.violations).toEqual([]);
      }),
      { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: Number(SEED) }) },
    );
    expect(leases.reads).toBeGreaterThan(RUNS);
    expect(leases.reasons['replica-waited'] ?? 0).toBeGreaterThan(0);
    expect(leases.reasons['primary-fallback'] ?? 0).toBeGreaterThan(0);
  });

  it('side by side on one fixed sample: leases and router.read never violate, the naive router does', async () => {
    const schedules = fc.sample(scheduleArbitrary(), { numRuns: SIDE_BY_SIDE, seed: 20_240_601 });
    for (const schedule of schedules) {
      sample.lease.add(await runSchedule(schedule, 'lease'));
      sample.router.add(await runSchedule(schedule, 'router'));
      sample.naive.add(await runSchedule(schedule, 'naive'));
    }
    expect(sample.naive.violations['read-your-writes'] ?? 0).toBeGreaterThan(0);
    expect(sample.naive.violatingSchedules).toBeGreaterThan(SIDE_BY_SIDE / 10);
    expect(sample.lease.violatingSchedules).toBe(0);
    expect(sample.router.violatingSchedules).toBe(0);
  });
});
