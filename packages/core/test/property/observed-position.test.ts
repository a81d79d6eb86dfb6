/**
 * Regression: `ReadOutcome.observed` is optional in the adapter contract. The router once raised
 * the session only to the monitor's sample of the target, taken BEFORE the read; the read may
 * have seen more, so the next read could go to a replica covered by the token yet older than what
 * the session already saw (monotonic reads, invariant 3). The router now probes the same node after the
 * read (a node's applied position only moves forward, so that probe covers what the read saw),
 * falling back to the primary's position when the probe fails. These tests run adapters that
 * leave `observed` out.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runSchedule } from './run-schedule.js';
import { type Schedule, scheduleArbitrary } from './schedule.js';

/**
 * Shrunk by fast-check. r0 applies at once, r1 120 ms behind; reads go round-robin; no waits, no
 * fallback. At 0 ms session 1 commits seq 1 while session 0 reads three times. Session 0's second
 * read runs on r0 after that commit and sees seq 1, but without `observed` the router raises the
 * session only to r0's sample from `ready()` (seq 0). The third read goes to r1, "covered" for
 * seq 0, and shows seq 0: older than what the session already saw.
 */
const SHRUNK: Schedule = {
  seed: 0,
  replicaLagsMs: [0, 120],
  serverSideWait: false,
  maxReadLatencyMs: 0,
  maxCommitLatencyMs: 0,
  tokenRoundTrip: false,
  router: {
    waitBudgetMs: 0,
    pollIntervalMs: 1,
    fallbackEnabled: false,
    burst: 1,
    ratePerSecond: 0,
    degraded: 'error',
    selection: 'round-robin',
    maxLagSeconds: 10,
    maxSampleAgeMs: undefined,
    monitorIntervalMs: 5,
  },
  sessions: [[{ kind: 'read' }, { kind: 'read' }, { kind: 'read' }], [{ kind: 'write' }]],
  events: [],
};

describe('core Router with an adapter that leaves ReadOutcome.observed out', () => {
  it('shrunk schedule: the session never reads older than it saw', async () => {
    // Control: the same schedule is clean when the adapter reports `observed`.
    expect((await runSchedule(SHRUNK, 'router')).violations).toEqual([]);
    const result = await runSchedule(SHRUNK, 'router', { reportObserved: false });
    expect(result.violations).toEqual([]);
  });

  it('property: monotonic reads and read-your-writes hold', async () => {
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary(), async (schedule) => {
        const result = await runSchedule(schedule, 'router', { reportObserved: false });
        expect(result.violations).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('with the proposed fix (probe the node after the read) applied in the adapter, they hold', async () => {
    expect(
      (await runSchedule(SHRUNK, 'router', { reportObserved: false, probeAfterRead: true }))
        .violations,
    ).toEqual([]);
    let reads = 0;
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary(), async (schedule) => {
        const result = await runSchedule(schedule, 'router', {
          reportObserved: false,
          probeAfterRead: true,
        });
        reads += result.reads;
        expect(result.violations).toEqual([]);
      }),
      { numRuns: 300 },
    );
    console.log(
      `[simulator] observed omitted + probe-after-read: 300 schedules, ${reads} reads checked`,
    );
  });

  it('writes settled from a primary probe (uncaptured) cover the reads pending before them: both invariants hold, settling or carrying', async () => {
    const runs = { schedules: 0, reads: 0, uncoveredControl: 0 };
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary(), fc.boolean(), async (schedule, carry) => {
        const withTokens = { ...schedule, tokenRoundTrip: true };
        const result = await runSchedule(withTokens, 'router', {
          reportObserved: false,
          captureWrites: false,
          pendingReads: carry ? 'carry' : 'settle',
        });
        runs.schedules++;
        runs.reads += result.reads;
        expect(result.violations).toEqual([]);
        // Control: the same uncaptured writes with a carrier that drops pending positions.
        const control = await runSchedule(withTokens, 'router', {
          reportObserved: false,
          captureWrites: false,
          pendingReads: 'drop',
        });
        if (control.violations.length > 0) runs.uncoveredControl++;
      }),
      { numRuns: 300 },
    );
    expect(runs.uncoveredControl).toBeGreaterThan(0);
    console.log(
      `[simulator] uncaptured writes settled by a primary probe: ${runs.schedules} schedules, ${runs.reads} reads, 0 violations; control (pending dropped): ${runs.uncoveredControl} violate`,
    );
  });

  it('pending reads carried in the token across requests: monotonic reads and read-your-writes hold; dropping them breaks', async () => {
    const carried = { schedules: 0, reads: 0 };
    const dropped = { schedules: 0, violating: 0 };
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary(), async (schedule) => {
        const withTokens = { ...schedule, tokenRoundTrip: true };
        const result = await runSchedule(withTokens, 'router', {
          reportObserved: false,
          pendingReads: 'carry',
        });
        carried.schedules++;
        carried.reads += result.reads;
        expect(result.violations).toEqual([]);
        // Control: a carrier that drops the pending reads (encodes only what was settled).
        const control = await runSchedule(withTokens, 'router', {
          reportObserved: false,
          pendingReads: 'drop',
        });
        dropped.schedules++;
        if (control.violations.length > 0) dropped.violating++;
      }),
      { numRuns: 500 },
    );
    console.log(
      `[simulator] pending reads carried in tokens: ${carried.schedules} schedules, ${carried.reads} reads, 0 violations; control (pending dropped): ${dropped.violating} of ${dropped.schedules} schedules violate`,
    );
    expect(dropped.violating).toBeGreaterThan(0);
  });
});
