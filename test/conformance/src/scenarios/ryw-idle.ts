import { Session } from '@tidemark/core';
import { check, newOrder } from '../kit.js';
import type { Scenario } from '../scenario.js';

const SESSIONS = 20;
const WRITES_PER_SESSION = 10;

/**
 * Read-your-writes at idle lag: every write is followed at once by a read of the writer's own
 * orders. The router must never miss; the naive control may or may not (replication is fast
 * when idle), so its misses are reported, not asserted.
 */
export const rywIdle: Scenario = {
  name: 'ryw-idle',
  summary: 'each write followed at once by a read of the own orders: router 0 misses',
  freshCluster: false,
  async run(ctx) {
    const handle = await ctx.router();
    const { router } = handle;
    const orders = await ctx.orders(handle);
    let routerMisses = 0;
    for (let s = 0; s < SESSIONS; s++) {
      const session = new Session();
      const customer = ctx.nextId();
      for (let i = 0; i < WRITES_PER_SESSION; i++) {
        const order = newOrder(ctx, customer, `ryw ${s}/${i}`);
        await orders.insertOrder(session, order);
        const { ids } = await orders.ordersOf(session, customer);
        if (!ids.includes(order.id)) routerMisses++;
      }
    }

    const naive = await ctx.naiveOrders();
    let controlMisses = 0;
    for (let s = 0; s < SESSIONS; s++) {
      const customer = ctx.nextId();
      for (let i = 0; i < WRITES_PER_SESSION; i++) {
        const order = newOrder(ctx, customer, `ryw control ${s}/${i}`);
        await naive.insertOrder(order);
        const ids = await naive.ordersOf(customer);
        if (!ids.includes(order.id)) controlMisses++;
      }
    }

    const total = SESSIONS * WRITES_PER_SESSION;
    const m = router.metrics();
    return {
      counts: {
        router_misses: routerMisses,
        control_misses: controlMisses,
        fallbacks: m.primaryReads,
        waits: m.waits,
        reads: m.reads,
        replica_reads: m.replicaReads,
        covered: m.byReason['replica-covered'],
        waited: m.byReason['replica-waited'],
        wait_ms_total: Math.round(m.waitMsTotal),
        server_side_waits: handle.waits.filter((w) => w.serverSide).length,
      },
      checks: [
        check(
          'router-no-miss',
          routerMisses === 0,
          `router missed ${routerMisses} of ${total} own writes (expected 0)`,
        ),
        check('router-served-all', m.reads === total, `router served ${m.reads} of ${total} reads`),
      ],
    };
  },
};
