import { Session } from '@tidemark/core';
import type { RouterHandle, ScenarioContext } from '../context.js';
import { check, errorText, newOrder, sleep, tally, twoReplicas } from '../kit.js';
import type { NaiveRouter } from '../naive.js';
import type { Scenario } from '../scenario.js';

const DURATION_MS = 4000;
const KILL_AT_MS = 1500;
const ROUTER_SESSIONS = 4;
const CONTROL_SESSIONS = 2;

interface LoopStats {
  pairs: number;
  pairsAfterKill: number;
  misses: number;
  errors: string[];
}

function emptyStats(): LoopStats {
  return { pairs: 0, pairsAfterKill: 0, misses: 0, errors: [] };
}

/** One user: write an order, read own orders at once, until the deadline. */
async function routerLoop<P, C>(
  ctx: ScenarioContext<P, C>,
  handle: RouterHandle<P, C>,
  deadline: number,
  killed: () => boolean,
  stats: LoopStats,
): Promise<void> {
  const session = new Session();
  const customer = ctx.nextId();
  while (Date.now() < deadline) {
    const order = newOrder(ctx, customer, 'kill load');
    try {
      await handle.router.write(session, (c) => ctx.workload.insertOrder(c, order));
      const ids = await handle.router.read(session, (c) => ctx.workload.ordersOf(c, customer));
      if (!ids.includes(order.id)) stats.misses++;
    } catch (error) {
      stats.errors.push(errorText(error));
    }
    stats.pairs++;
    if (killed()) stats.pairsAfterKill++;
  }
}

async function controlLoop<P, C>(
  ctx: ScenarioContext<P, C>,
  naive: NaiveRouter<P, C>,
  deadline: number,
  killed: () => boolean,
  stats: LoopStats,
): Promise<void> {
  const customer = ctx.nextId();
  while (Date.now() < deadline) {
    const order = newOrder(ctx, customer, 'kill load control');
    try {
      await naive.write((c) => ctx.workload.insertOrder(c, order));
      const { value } = await naive.read((c) => ctx.workload.ordersOf(c, customer));
      if (!value.includes(order.id)) stats.misses++;
    } catch (error) {
      stats.errors.push(errorText(error));
    }
    stats.pairs++;
    if (killed()) stats.pairsAfterKill++;
    // A failing control loop would otherwise spin on instant connection errors.
    await sleep(1);
  }
}

/**
 * A replica crashes (SIGKILL) under load. Concurrent sessions write and read their own orders
 * in a loop through the router; mid-way one replica is killed. No error may reach a user and no
 * read may miss: failed reads are retried once elsewhere (counted). The naive control, running
 * at the same time, must see errors or misses.
 */
export const replicaKilled: Scenario = {
  name: 'replica-killed',
  summary: 'SIGKILL a replica under concurrent load: no user error, 0 misses, retries counted',
  freshCluster: true,
  needs: ['kill'],
  async run(ctx) {
    const [victim] = twoReplicas(ctx);
    const handle = await ctx.router();
    const naive = ctx.naive();
    let killedAt: number | undefined;
    const killed = () => killedAt !== undefined;
    const deadline = Date.now() + DURATION_MS;

    const routerStats = Array.from({ length: ROUTER_SESSIONS }, emptyStats);
    const controlStats = Array.from({ length: CONTROL_SESSIONS }, emptyStats);
    const killer = (async () => {
      await sleep(KILL_AT_MS);
      await ctx.cluster.kill(victim);
      killedAt = Date.now();
    })();
    await Promise.all([
      ...routerStats.map((stats) => routerLoop(ctx, handle, deadline, killed, stats)),
      ...controlStats.map((stats) => controlLoop(ctx, naive, deadline, killed, stats)),
      killer,
    ]);

    const sum = (list: LoopStats[], key: 'pairs' | 'pairsAfterKill' | 'misses') =>
      list.reduce((total, stats) => total + stats[key], 0);
    const routerErrors = routerStats.flatMap((s) => s.errors);
    const controlErrors = controlStats.flatMap((s) => s.errors);
    const routerMisses = sum(routerStats, 'misses');
    const controlMisses = sum(controlStats, 'misses');
    const failedAttempts = handle.reads.filter((r) => !r.ok);
    const m = handle.router.metrics();
    return {
      counts: {
        router_misses: routerMisses,
        control_misses: controlMisses,
        fallbacks: m.primaryReads,
        waits: m.waits,
        router_pairs: sum(routerStats, 'pairs'),
        router_pairs_after_kill: sum(routerStats, 'pairsAfterKill'),
        router_errors: routerErrors.length,
        retries: m.retries,
        failed_attempts: failedAttempts.length,
        control_errors: controlErrors.length,
      },
      checks: [
        check(
          'no-user-error',
          routerErrors.length === 0,
          `errors reached router users: ${JSON.stringify(tally(routerErrors))}`,
        ),
        check('router-no-miss', routerMisses === 0, `router missed ${routerMisses} own writes`),
        check(
          'load-continued-after-kill',
          sum(routerStats, 'pairsAfterKill') > 0,
          `${sum(routerStats, 'pairsAfterKill')} router write+read pairs after the kill (must be > 0, else the kill was not under load)`,
        ),
        check(
          'control-sees-anomaly',
          controlErrors.length + controlMisses > 0,
          `naive router: ${controlErrors.length} errors, ${controlMisses} misses (must be > 0: it keeps reading the killed replica)`,
        ),
      ],
    };
  },
};
