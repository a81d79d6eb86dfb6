import { Session } from '@tidemark/core';
import { check, newOrder, sessionPosition, tally, twoReplicas, waitUntilApplied } from '../kit.js';
import type { Scenario } from '../scenario.js';

const READERS = 10;
// Odd on purpose: round robin counts every selection, so with an even number of reads per
// reader every reader's first (token-less) read would land on the same replica.
const READS_PER_READER = 7;

/**
 * Monotonic reads across two replicas at different lag. Replica A is paused, a write lands, and
 * replica B applies it. Reader sessions (which wrote nothing) then read repeatedly. Once a
 * session has seen the write, it must keep seeing it. The router uses round-robin selection on
 * purpose: the most adversarial policy, so only the token can keep sessions from going back.
 * The control (naive round robin, or the integration's own replica helper) must go back in time.
 */
export const monotonicReads: Scenario = {
  name: 'monotonic-reads',
  summary: 'two replicas at different lag: sessions never go back in time; control does',
  freshCluster: false,
  needs: ['pause'],
  async run(ctx) {
    const { cluster } = ctx;
    const [lagging, current] = twoReplicas(ctx);
    const handle = await ctx.router({ selection: 'round-robin' });
    const { router } = handle;
    const orders = await ctx.orders(handle);

    await cluster.pauseReplay(lagging);
    const writer = new Session();
    const customer = ctx.nextId();
    const order = newOrder(ctx, customer, 'monotonic');
    await orders.insertOrder(writer, order);
    // An autocommit write (as integrations send them) may settle its position after it returns.
    await writer.settledWrites();
    await waitUntilApplied(ctx, current, sessionPosition(handle, writer));
    // Let the monitor see both replicas as they are now: one behind, one current.
    await router.ready();

    let routerBack = 0;
    let routerSawNew = 0;
    let routerSawOld = 0;
    const targets: string[] = [];
    for (let r = 0; r < READERS; r++) {
      const reader = new Session();
      let seen = false;
      for (let i = 0; i < READS_PER_READER; i++) {
        const { ids, decision } = await orders.ordersOf(reader, customer);
        targets.push(decision.target);
        const has = ids.includes(order.id);
        if (has) routerSawNew++;
        else routerSawOld++;
        if (seen && !has) routerBack++;
        seen ||= has;
      }
    }

    const naive = await ctx.naiveOrders();
    let controlBack = 0;
    for (let r = 0; r < READERS; r++) {
      let seen = false;
      for (let i = 0; i < READS_PER_READER; i++) {
        const has = (await naive.ordersOf(customer)).includes(order.id);
        if (seen && !has) controlBack++;
        seen ||= has;
      }
    }

    const total = READERS * READS_PER_READER;
    return {
      counts: {
        router_misses: routerBack,
        control_misses: controlBack,
        fallbacks: router.metrics().primaryReads,
        waits: router.metrics().waits,
        reads: total,
        router_saw_new: routerSawNew,
        router_saw_old: routerSawOld,
        router_reads_lagging: targets.filter((t) => t === lagging).length,
      },
      checks: [
        check(
          'router-never-back-in-time',
          routerBack === 0,
          `router sessions went back in time ${routerBack} times in ${total} reads (expected 0)`,
        ),
        check(
          'router-saw-both-states',
          routerSawNew > 0 && routerSawOld > 0,
          `router reads saw the new write ${routerSawNew} times and the old state ${routerSawOld} times (targets ${JSON.stringify(tally(targets))}); both must happen, else going back in time was impossible and the check vacuous`,
        ),
        check(
          'control-goes-back-in-time',
          controlBack > 0,
          `the control went back in time ${controlBack} times (must be > 0: replica ${lagging} is paused behind ${current})`,
        ),
      ],
    };
  },
};
