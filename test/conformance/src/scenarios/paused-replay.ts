import { Session } from '@tidemark/core';
import { check, errorCode, newOrder, tally, twoReplicas } from '../kit.js';
import type { Scenario } from '../scenario.js';

const WRITES = 60;
const CAP = { burst: 100, ratePerSecond: 0 };

/**
 * Replay paused on every replica: nothing written from now on reaches a replica. The router
 * must serve every read from the primary under its cap; the naive control must miss every
 * write (if it did not, the replicas were not really paused and the scenario proves nothing).
 */
export const pausedReplay: Scenario = {
  name: 'paused-replay',
  summary:
    'replay paused everywhere: router 0 misses via capped primary fallback; control misses all',
  freshCluster: false,
  needs: ['pause'],
  async run(ctx) {
    const { cluster } = ctx;
    for (const name of twoReplicas(ctx)) await cluster.pauseReplay(name);
    // Created after the pause so the monitor's first view already shows paused replicas.
    const handle = await ctx.router({ fallback: CAP, wait: { budgetMs: 100 } });
    const { router } = handle;
    const orders = await ctx.orders(handle);

    const started = Date.now();
    const written: Array<{ session: Session; customer: number; id: number }> = [];
    for (let i = 0; i < WRITES; i++) {
      const session = new Session();
      const order = newOrder(ctx, ctx.nextId(), `paused ${i}`);
      await orders.insertOrder(session, order);
      written.push({ session, customer: order.customer, id: order.id });
    }
    let routerMisses = 0;
    const errors: string[] = [];
    const targets: string[] = [];
    for (const { session, customer, id } of written) {
      try {
        const { ids, decision } = await orders.ordersOf(session, customer);
        targets.push(decision.target);
        if (!ids.includes(id)) routerMisses++;
      } catch (error) {
        errors.push(errorCode(error));
      }
    }
    const elapsedSeconds = (Date.now() - started) / 1000;

    const naive = await ctx.naiveOrders();
    const controlWritten: Array<{ customer: number; id: number }> = [];
    for (let i = 0; i < WRITES; i++) {
      const order = newOrder(ctx, ctx.nextId(), `paused control ${i}`);
      await naive.insertOrder(order);
      controlWritten.push({ customer: order.customer, id: order.id });
    }
    let controlMisses = 0;
    for (const { customer, id } of controlWritten) {
      const ids = await naive.ordersOf(customer);
      if (!ids.includes(id)) controlMisses++;
    }

    const m = router.metrics();
    const capBound = CAP.burst + CAP.ratePerSecond * elapsedSeconds;
    const byTarget = tally(targets);
    return {
      counts: {
        router_misses: routerMisses,
        control_misses: controlMisses,
        fallbacks: m.primaryReads,
        waits: m.waits,
        reads: m.reads,
        replica_reads: m.replicaReads,
        errors: errors.length,
        cap_rejections: m.capRejections,
      },
      checks: [
        check('router-no-miss', routerMisses === 0, `router missed ${routerMisses} of ${WRITES}`),
        check(
          'router-no-error',
          errors.length === 0,
          `router errors: ${JSON.stringify(tally(errors))} (expected none: the cap of ${CAP.burst} covers ${WRITES} reads)`,
        ),
        check(
          'fallbacks-within-cap',
          m.primaryReads <= capBound,
          `${m.primaryReads} primary fallbacks, cap allows ${capBound.toFixed(1)}`,
        ),
        check(
          'all-reads-on-primary',
          (byTarget['primary'] ?? 0) === WRITES,
          `read targets ${JSON.stringify(byTarget)}; with replay paused only the primary has the writes`,
        ),
        check(
          'control-misses-all',
          controlMisses === WRITES,
          `the control missed ${controlMisses} of ${WRITES} (must miss all: replicas are paused)`,
        ),
      ],
    };
  },
};
