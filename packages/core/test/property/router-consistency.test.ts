/**
 * Property tests of the real core Router against the replication simulator: for every generated
 * schedule of writes, reads, lag changes, pauses and crashes, no read misses the session's own
 * acknowledged writes, no read goes back in time, and primary fallbacks stay under the cap.
 * The naive-router control that proves these checks can fail is in naive-control.test.ts.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/index.js';
import { checkFallbackCap, RunTally, runSchedule } from './run-schedule.js';
import { routerSettings, scheduleArbitrary } from './schedule.js';

/** Sized to keep the whole property + fuzz run near 30 s on the 2-core CI machine. */
const RUNS = Number(process.env.TIDEMARK_PROPERTY_RUNS ?? 1000);
const SEED = process.env.TIDEMARK_PROPERTY_SEED;
const fcOptions = { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: Number(SEED) }) };

describe('core Router on the replication simulator', () => {
  const tally = new RunTally();
  const strict = new RunTally();
  afterAll(() => {
    console.log(tally.summary('router, all settings'));
    console.log(strict.summary('router, wait=0 fallback=off degraded=error'));
  });

  it('never misses own writes, never reads back in time, keeps fallbacks under the cap', async () => {
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary(), async (schedule) => {
        const result = await runSchedule(schedule, 'router');
        tally.add(result);
        expect(result.violations).toEqual([]);
      }),
      fcOptions,
    );
    // The property only means something if reads ran and the hard paths were taken.
    expect(tally.reads).toBeGreaterThan(RUNS);
    expect(tally.reasons['replica-waited'] ?? 0).toBeGreaterThan(0);
    expect(tally.reasons['primary-fallback'] ?? 0).toBeGreaterThan(0);
    expect(tally.reasons['degraded-stale'] ?? 0).toBeGreaterThan(0);
    expect(tally.errors[ErrorCode.ReplicasBehind] ?? 0).toBeGreaterThan(0);
  });

  it('the fallback-cap check itself catches a burst over the bucket', () => {
    const cap = { fallbackEnabled: true, burst: 2, ratePerSecond: 1 };
    expect(checkFallbackCap([0, 0, 1000], cap)).toBeUndefined();
    expect(checkFallbackCap([0, 0, 999], cap)?.kind).toBe('fallback-cap');
    expect(checkFallbackCap([5000, 5000, 5000], cap)?.kind).toBe('fallback-cap');
    expect(checkFallbackCap([1], { ...cap, fallbackEnabled: false })?.kind).toBe('fallback-cap');
  });

  it('with wait and fallback disabled under degraded error, errors instead of missing', async () => {
    const pinned = routerSettings({
      waitBudgetMs: fc.constant(0),
      fallbackEnabled: fc.constant(false),
      degraded: fc.constant('error' as const),
    });
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary(pinned), async (schedule) => {
        const result = await runSchedule(schedule, 'router');
        strict.add(result);
        expect(result.violations).toEqual([]);
        expect(result.staleReads).toBe(0);
        expect(result.primaryReads).toBe(0);
      }),
      { ...fcOptions, numRuns: Math.max(1, Math.floor(RUNS / 2)) },
    );
    // Replicas behind must have shown up as errors, and covered replicas must still serve.
    expect(strict.errors[ErrorCode.ReplicasBehind] ?? 0).toBeGreaterThan(0);
    expect(strict.reasons['replica-covered'] ?? 0).toBeGreaterThan(0);
  });
});
