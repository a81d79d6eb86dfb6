import { ErrorCode, OtherHistoryError, PRIMARY, Session, TokenCodec } from '@tidemark/core';
import { check, errorText, newOrder, twoReplicas, waitForCatchUp } from '../kit.js';
import type { Scenario } from '../scenario.js';

const STRICT_READS = 5;

/**
 * Promotion of a replica that lacks an acknowledged write. The new primary R must not have the
 * write W, so R is stopped before W is written (a replica merely paused would replay W while
 * being promoted: promotion applies all WAL already received). The other replica is stopped
 * first so it never gets ahead of R and can follow R's new history. After the failover a
 * session carrying W's token must be detected as coming from another history: by default an
 * OtherHistoryError (counted, never served as fresh); with otherHistory 'primary' the read goes
 * to the new primary, where W is indeed absent. The naive control reads after the failover
 * without any signal that W was lost.
 */
export const promotionLostWrite: Scenario = {
  name: 'promotion-lost-write',
  summary:
    'promote a replica without write W: old token -> OtherHistoryError or primary read; never fresh',
  freshCluster: true,
  needs: ['kill', 'promote'],
  async run(ctx) {
    const { cluster, workload } = ctx;
    const [promoted, follower] = twoReplicas(ctx);
    const oldPrimary = cluster.primary().name;
    const tokens = new TokenCodec();

    // Before the failover: W is acknowledged by the primary and held in the session's token.
    const before = await ctx.router({}, { unreplicatedWrites: true });
    await waitForCatchUp(ctx);
    await cluster.stop(follower);
    await cluster.stop(promoted);
    const writer = new Session();
    const order = newOrder(ctx, ctx.nextId(), 'lost in failover');
    await before.router.write(writer, (c) => workload.insertOrder(c, order));
    const token = tokens.encode(writer.toTokenData());
    const carried = () => Session.fromToken(tokens.decode(token));

    // The failover: the old primary goes away, R becomes primary, the follower follows R.
    await cluster.stop(oldPrimary);
    await cluster.start(promoted);
    await cluster.promote(promoted);
    await cluster.start(follower);
    await ctx.resetInspector();
    await waitForCatchUp(ctx);

    // Default policy: detected, counted, thrown; never served.
    const strict = await ctx.router();
    const strictOutcomes: string[] = [];
    let servedFresh = 0;
    for (let i = 0; i < STRICT_READS; i++) {
      try {
        const { value, decision } = await strict.router.readDetailed(carried(), (c) =>
          workload.ordersOf(c, order.customer),
        );
        servedFresh++;
        strictOutcomes.push(
          `served by ${decision.target}/${decision.reason} with ${value.includes(order.id) ? '' : 'no '}W`,
        );
      } catch (error) {
        strictOutcomes.push(
          error instanceof OtherHistoryError && error.code === ErrorCode.OtherHistory
            ? ErrorCode.OtherHistory
            : errorText(error),
        );
      }
    }
    const detected = strictOutcomes.filter((o) => o === ErrorCode.OtherHistory).length;

    // Policy 'primary': the read goes to the new primary, which does not have W.
    const lenient = await ctx.router({ otherHistory: 'primary' });
    let lenientOutcome: string;
    let lenientOk = false;
    try {
      const { value, decision } = await lenient.router.readDetailed(carried(), (c) =>
        workload.ordersOf(c, order.customer),
      );
      lenientOk =
        decision.target === PRIMARY &&
        decision.reason === 'primary-other-history' &&
        !value.includes(order.id);
      lenientOutcome = `${decision.target}/${decision.reason}, W ${value.includes(order.id) ? 'present' : 'absent'}`;
    } catch (error) {
      lenientOutcome = errorText(error);
    }
    // Independent of any router: the new primary really lacks W, so W was really lost.
    const onNewPrimary = await ctx
      .inspector()
      .read(PRIMARY, (c) => workload.ordersOf(c, order.customer), {});
    const lostForReal = !onNewPrimary.value.includes(order.id);

    // Control: the naive router reads without any signal that the session's write is gone.
    const naive = ctx.naive();
    let controlSilent = 0;
    const controlOutcomes: string[] = [];
    for (let i = 0; i < 2; i++) {
      try {
        const { value, target } = await naive.read((c) => workload.ordersOf(c, order.customer));
        if (!value.includes(order.id)) controlSilent++;
        controlOutcomes.push(`${target}: W ${value.includes(order.id) ? 'present' : 'absent'}`);
      } catch (error) {
        controlOutcomes.push(errorText(error));
      }
    }

    const strictMetrics = strict.router.metrics();
    const lenientMetrics = lenient.router.metrics();
    return {
      counts: {
        router_misses: servedFresh,
        control_misses: controlSilent,
        fallbacks: strictMetrics.primaryReads + lenientMetrics.primaryReads,
        waits: strictMetrics.waits + lenientMetrics.waits,
        other_history_detected: detected,
        other_history_metric: strictMetrics.otherHistory + lenientMetrics.otherHistory,
      },
      checks: [
        check(
          'lost-write-is-lost',
          lostForReal,
          `W ${lostForReal ? 'is absent from' : 'survived on'} the new primary ${promoted} (the setup must lose it)`,
        ),
        check(
          'detected-not-served',
          detected === STRICT_READS && servedFresh === 0,
          `default policy outcomes: ${strictOutcomes.join('; ')} (expected ${ErrorCode.OtherHistory} every time)`,
        ),
        check(
          'counted',
          strictMetrics.otherHistory === STRICT_READS && lenientMetrics.otherHistory === 1,
          `metrics.otherHistory: ${strictMetrics.otherHistory} (default), ${lenientMetrics.otherHistory} ('primary')`,
        ),
        check(
          'primary-policy-reads-new-primary',
          lenientOk,
          `otherHistory 'primary': ${lenientOutcome} (expected primary/primary-other-history, W absent)`,
        ),
        check(
          'control-silent',
          controlSilent > 0,
          `naive reads after the failover: ${controlOutcomes.join('; ')} (must return without W and without any error)`,
        ),
      ],
    };
  },
};
