import { Session } from '@tidemark/core';
import { check, newOrder, sleep, tally, twoReplicas } from '../kit.js';
import type { Scenario } from '../scenario.js';

const REPETITIONS = 5;
const RESUME_AFTER_MS = 100;
const BUDGET_MS = 2000;
/** A wait shorter than this did not really wait for the resume; longer means it barely made it. */
const SANE_WAIT_MS = { min: RESUME_AFTER_MS / 2, max: BUDGET_MS * 0.75 };

/**
 * A bounded wait that succeeds. The other replica is paused (out of the running), the waited-on
 * replica is paused right after the monitor sampled it healthy, a write lands, and the replica
 * resumes ~100 ms into the read's 2 s budget. The read must wait and be served by that replica
 * (reason `replica-waited`), not by the primary. The naive control, reading at the moment of the
 * write, must miss it.
 */
export const boundedWait: Scenario = {
  name: 'bounded-wait',
  summary: 'replica resumes 100 ms into a 2 s budget: read waits for it (replica-waited), 0 misses',
  freshCluster: false,
  needs: ['pause'],
  async run(ctx) {
    const { workload, cluster } = ctx;
    const [waitOn, other] = twoReplicas(ctx);
    await cluster.pauseReplay(other);
    // A slow monitor keeps the view from ready(): the replica looks healthy and not paused, as a
    // replica that is merely slow would. A fresher view would route around the pause instead.
    const handle = await ctx.router({
      wait: { budgetMs: BUDGET_MS },
      monitorOptions: { intervalMs: 60_000 },
      health: { maxSampleAgeMs: 120_000 },
    });
    const { router } = handle;
    const naive = ctx.naive();

    let routerMisses = 0;
    let controlMisses = 0;
    const reasons: string[] = [];
    const targets: string[] = [];
    const waited: number[] = [];
    for (let rep = 0; rep < REPETITIONS; rep++) {
      await router.ready();
      await cluster.pauseReplay(waitOn);
      const session = new Session();
      const order = newOrder(ctx, ctx.nextId(), `bounded wait ${rep}`);
      await router.write(session, (c) => workload.insertOrder(c, order));

      const control = await naive.read((c) => workload.ordersOf(c, order.customer));
      if (!control.value.includes(order.id)) controlMisses++;

      const resumed = sleep(RESUME_AFTER_MS).then(() => cluster.resumeReplay(waitOn));
      try {
        const { value, decision } = await router.readDetailed(session, (c) =>
          workload.ordersOf(c, order.customer),
        );
        reasons.push(decision.reason);
        targets.push(decision.target);
        waited.push(decision.waitedMs);
        if (!value.includes(order.id)) routerMisses++;
      } finally {
        await resumed;
      }
    }
    await cluster.resumeReplay(other);

    const m = router.metrics();
    const saneWaits = waited.filter((ms) => ms >= SANE_WAIT_MS.min && ms <= SANE_WAIT_MS.max);
    const byReason = tally(reasons);
    return {
      counts: {
        router_misses: routerMisses,
        control_misses: controlMisses,
        fallbacks: m.primaryReads,
        waits: m.waits,
        waits_reached: m.waitsReached,
        server_side_waits: handle.waits.filter((w) => w.serverSide).length,
        waited_ms_min: Math.round(Math.min(...waited)),
        waited_ms_max: Math.round(Math.max(...waited)),
      },
      checks: [
        check(
          'router-no-miss',
          routerMisses === 0,
          `router missed ${routerMisses} of ${REPETITIONS}`,
        ),
        check(
          'reason-replica-waited',
          byReason['replica-waited'] === REPETITIONS,
          `decision reasons ${JSON.stringify(byReason)} (expected replica-waited every time)`,
        ),
        check(
          'served-by-waited-replica',
          targets.every((t) => t === waitOn),
          `targets ${JSON.stringify(tally(targets))} (expected ${waitOn})`,
        ),
        check(
          'waited-ms-sane',
          saneWaits.length === REPETITIONS,
          `waitedMs ${waited.map((ms) => Math.round(ms)).join(',')} (expected each in ${SANE_WAIT_MS.min}..${SANE_WAIT_MS.max} after a resume at ${RESUME_AFTER_MS} ms)`,
        ),
        check(
          'control-misses',
          controlMisses === REPETITIONS,
          `naive router missed ${controlMisses} of ${REPETITIONS} (must miss all: both replicas paused at that moment)`,
        ),
      ],
    };
  },
};
