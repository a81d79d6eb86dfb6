import { PRIMARY, Session } from '@tidemark/core';
import {
  check,
  errorCode,
  errorText,
  isOtherHistory,
  stageOldHistoryReplica,
  tally,
} from '../kit.js';
import type { Scenario } from '../scenario.js';

const STRICT_READS = 5;
const TOKENLESS_READS = 20;
const CONTROL_READS = 4;

/**
 * A failover that leaves a replica on the old history: R2 is promoted without W while
 * R1, which applied W, stays a running replica that follows nobody. A router created after the
 * promotion, still listing R1 as a replica, must never serve W as fresh: a read with W's token
 * gets OtherHistoryError (or, under otherHistory 'primary', a primary read without W), and a
 * read without a token never goes to R1 (invariant 9: a replica is readable only while it is
 * on the current primary's history). The naive control reads R1 and serves W.
 */
export const lostWriteOldHistoryReplica: Scenario = {
  name: 'lost-write-old-history-replica',
  summary:
    'promote R2 without W, R1 left on the old history with W: token reads -> OtherHistory, tokenless reads never R1',
  freshCluster: true,
  needs: ['kill', 'promote-partial'],
  async run(ctx) {
    const { workload } = ctx;
    const topology = await stageOldHistoryReplica(ctx, 'lost, kept by the old-history replica');
    const { lost, oldHistoryReplica: r1 } = topology;
    const readLost = (c: Parameters<typeof workload.ordersOf>[0]) =>
      workload.ordersOf(c, lost.customer);

    // Default policy: W's token is from another history, whatever R1 says it applied.
    const strict = await ctx.router();
    const strictOutcomes: string[] = [];
    let servedFresh = 0;
    let servedWithW = 0;
    // Reads that were anomalous, each counted once: served as fresh with the lost token, or
    // showing W, or (without a token) served by the old-history replica.
    let anomalies = 0;
    for (let i = 0; i < STRICT_READS; i++) {
      try {
        const { value, decision } = await strict.router.readDetailed(topology.carried(), readLost);
        servedFresh++;
        anomalies++;
        if (value.includes(lost.id)) servedWithW++;
        strictOutcomes.push(
          `served by ${decision.target}/${decision.reason} with${value.includes(lost.id) ? '' : 'out'} W`,
        );
      } catch (error) {
        strictOutcomes.push(isOtherHistory(error) ? 'other-history' : errorText(error));
      }
    }
    const detected = strictOutcomes.filter((o) => o === 'other-history').length;

    // Policy 'primary': the new primary answers, without W.
    const lenient = await ctx.router({ otherHistory: 'primary' });
    let lenientOk = false;
    let lenientOutcome: string;
    try {
      const { value, decision } = await lenient.router.readDetailed(topology.carried(), readLost);
      lenientOk =
        decision.target === PRIMARY &&
        decision.reason === 'primary-other-history' &&
        !value.includes(lost.id);
      if (value.includes(lost.id)) {
        servedWithW++;
        anomalies++;
      }
      lenientOutcome = `${decision.target}/${decision.reason}, W ${value.includes(lost.id) ? 'present' : 'absent'}`;
    } catch (error) {
      lenientOutcome = errorText(error);
    }

    // Reads without a token: any healthy replica, but R1 is not on the primary's history.
    const tokenless = await ctx.router();
    const tokenlessTargets: string[] = [];
    let tokenlessOnR1 = 0;
    let tokenlessWithW = 0;
    const tokenlessErrors: string[] = [];
    for (let i = 0; i < TOKENLESS_READS; i++) {
      try {
        const { value, decision } = await tokenless.router.readDetailed(new Session(), readLost);
        tokenlessTargets.push(`${decision.target}/${decision.reason}`);
        if (decision.target === r1) tokenlessOnR1++;
        if (value.includes(lost.id)) tokenlessWithW++;
        if (decision.target === r1 || value.includes(lost.id)) anomalies++;
      } catch (error) {
        tokenlessErrors.push(errorCode(error));
      }
    }
    // The adapter may have refused R1 itself: the trace sees reads the decision never names.
    const tracedOnR1 = tokenless.reads.filter((r) => r.target === r1).length;

    // Control: the naive router reads R1 and serves W as if nothing happened.
    const naive = ctx.naive();
    let controlWithW = 0;
    const controlOutcomes: string[] = [];
    for (let i = 0; i < CONTROL_READS; i++) {
      try {
        const { value, target } = await naive.read(readLost);
        if (value.includes(lost.id)) controlWithW++;
        controlOutcomes.push(`${target}: W ${value.includes(lost.id) ? 'present' : 'absent'}`);
      } catch (error) {
        controlOutcomes.push(errorText(error));
      }
    }

    const metrics = [strict, lenient, tokenless].map((h) => h.router.metrics());
    const sum = (key: 'primaryReads' | 'waits' | 'otherHistory') =>
      metrics.reduce((total, m) => total + m[key], 0);
    return {
      counts: {
        router_misses: anomalies,
        control_misses: controlWithW,
        fallbacks: sum('primaryReads'),
        waits: sum('waits'),
        other_history_detected: detected,
        other_history_metric: sum('otherHistory'),
        token_reads_served: servedFresh,
        reads_with_lost_write: servedWithW + tokenlessWithW,
        tokenless_on_old_history: tokenlessOnR1,
        tokenless_attempts_on_old_history: tracedOnR1,
        tokenless_errors: tokenlessErrors.length,
      },
      checks: [
        ...topology.setupChecks,
        check(
          'token-read-detected-not-served',
          detected === STRICT_READS && servedFresh === 0,
          `default policy, W's token: ${strictOutcomes.join('; ')} (expected other-history every time)`,
        ),
        check(
          'primary-policy-reads-new-primary',
          lenientOk,
          `otherHistory 'primary': ${lenientOutcome} (expected primary/primary-other-history, W absent)`,
        ),
        check(
          'tokenless-never-old-history',
          tokenlessOnR1 === 0 && tracedOnR1 === 0 && tokenlessWithW === 0,
          `${TOKENLESS_READS} reads without a token: ${tokenlessOnR1} served by ${r1} (${tracedOnR1} attempted there), ${tokenlessWithW} returned W; targets ${JSON.stringify(tally(tokenlessTargets))}`,
        ),
        check(
          'tokenless-served',
          tokenlessErrors.length === 0,
          `reads without a token must be served by the primary (or a replica on its history): errors ${JSON.stringify(tally(tokenlessErrors))}`,
        ),
        check(
          'control-serves-lost-write',
          controlWithW > 0,
          `naive reads: ${controlOutcomes.join('; ')} (must return W from ${r1})`,
        ),
      ],
    };
  },
};
