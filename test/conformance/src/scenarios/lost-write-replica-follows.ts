import { Session } from '@tidemark/core';
import { type Adapter, PollingMonitor } from '@tidemark/core/adapter';
import {
  check,
  errorCode,
  errorText,
  isOtherHistory,
  newOrder,
  stageOldHistoryReplica,
  tally,
  waitUntilApplied,
} from '../kit.js';
import type { Scenario } from '../scenario.js';

const TOKEN_READS = 5;
const TOKENLESS_READS = 20;
const CONTROL_READS = 4;

/**
 * A failover whose lost write W stays on a replica that follows the new primary: R2 is promoted
 * without W, and R1, which applied W, is re-pointed at R2 and follows it, keeping W (MySQL takes
 * such a replica, W becoming an errant transaction). R1 then applies R2's newer writes too.
 *
 * The router's monitor samples the primary, then a write W2 lands on it, then R1 is probed: the
 * order of any busy cluster, where a replica's sample is often newer than the primary's. R1 then
 * holds both W (which the primary never had) and W2 (which the sample lacks). Judged as "ahead of
 * the sample", R1 would count as on the primary's history and serve W's token as fresh. It must
 * be found `diverged`: W's token gets OtherHistoryError, reads without a token never go to R1.
 * The naive control reads R1 and serves W.
 */
export const lostWriteReplicaFollows: Scenario = {
  name: 'lost-write-replica-follows',
  summary:
    'R1 keeps lost W and follows the new primary, probed after the primary sample: R1 diverged, W token -> OtherHistory, tokenless reads never R1',
  freshCluster: true,
  needs: ['kill', 'promote-partial', 'follow-diverged'],
  async run(ctx) {
    const { workload } = ctx;
    const topology = await stageOldHistoryReplica(ctx, 'lost, kept by the replica that follows', {
      follow: true,
    });
    const { lost, oldHistoryReplica: r1 } = topology;
    const readLost = (c: Parameters<typeof workload.ordersOf>[0]) =>
      workload.ordersOf(c, lost.customer);

    // The monitor probes only when told to (reads and waits may still ask), so the order of the
    // primary's sample and R1's is the scenario's.
    let monitor: PollingMonitor<unknown> | undefined;
    const monitorFor = <P, C>(adapter: Adapter<P, C>) => {
      const built = new PollingMonitor<P>({
        codec: adapter.codec,
        replicas: adapter.replicas,
        probe: (id, context) => adapter.probe(id, context),
        probePrimary: (context) => adapter.probePrimary(context),
        classifyAgainstPrimary: adapter.classifyAgainstPrimary
          ? (primary, applied) => adapter.classifyAgainstPrimary!(primary, applied)
          : undefined,
        coveredNeedsVerdict: adapter.coveredNeedsVerdict,
        shouldPoll: () => false,
      });
      monitor = built as PollingMonitor<unknown>;
      return built;
    };
    // Samples stay usable for the whole scenario: only history decides where reads go.
    const handle = await ctx.router({ health: { maxSampleAgeMs: 120_000 } }, {}, monitorFor);
    if (!monitor) throw new Error('the router did not take the scenario monitor');
    const historyAtReady = monitor.state(r1)?.history ?? 'absent';

    // W2 on the new primary after the primary's sample; R1 applies it; then R1 is probed.
    const writer = ctx.adapter();
    const w2 = newOrder(ctx, ctx.nextId(), 'written on the new primary after its sample');
    const written = await writer.write((c) => workload.insertOrder(c, w2), {});
    let followsNewPrimary = true;
    let followDetail = `${r1} applied W2`;
    if (written.position === undefined) {
      followsNewPrimary = false;
      followDetail = 'the write of W2 captured no position';
    } else {
      try {
        await waitUntilApplied(ctx, r1, written.position as never);
      } catch (error) {
        followsNewPrimary = false;
        followDetail = errorText(error);
      }
    }
    await monitor.refresh(r1);
    const historyAhead = monitor.state(r1)?.history ?? 'absent';

    const tokenOutcomes: string[] = [];
    let served = 0;
    let anomalies = 0;
    let readsWithW = 0;
    for (let i = 0; i < TOKEN_READS; i++) {
      try {
        const { value, decision } = await handle.router.readDetailed(topology.carried(), readLost);
        served++;
        anomalies++;
        if (value.includes(lost.id)) readsWithW++;
        tokenOutcomes.push(
          `served by ${decision.target}/${decision.reason} with${value.includes(lost.id) ? '' : 'out'} W`,
        );
      } catch (error) {
        tokenOutcomes.push(isOtherHistory(error) ? 'other-history' : errorText(error));
      }
    }
    const detected = tokenOutcomes.filter((o) => o === 'other-history').length;

    const tokenlessTargets: string[] = [];
    const tokenlessErrors: string[] = [];
    let tokenlessOnR1 = 0;
    for (let i = 0; i < TOKENLESS_READS; i++) {
      try {
        const { value, decision } = await handle.router.readDetailed(new Session(), readLost);
        tokenlessTargets.push(`${decision.target}/${decision.reason}`);
        if (decision.target === r1) tokenlessOnR1++;
        if (value.includes(lost.id)) readsWithW++;
        if (decision.target === r1 || value.includes(lost.id)) anomalies++;
      } catch (error) {
        tokenlessErrors.push(errorCode(error));
      }
    }
    const tracedOnR1 = handle.reads.filter((r) => r.target === r1).length;

    // Control: reads without Tidemark reach R1 and show W as if it had never been lost.
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

    const m = handle.router.metrics();
    return {
      counts: {
        router_misses: anomalies,
        control_misses: controlWithW,
        fallbacks: m.primaryReads,
        other_history_detected: detected,
        token_reads_served: served,
        reads_with_lost_write: readsWithW,
        tokenless_on_r1: tokenlessOnR1,
        tokenless_attempts_on_r1: tracedOnR1,
        tokenless_errors: tokenlessErrors.length,
      },
      checks: [
        ...topology.setupChecks,
        check('setup-replica-follows-new-primary', followsNewPrimary, followDetail),
        check(
          'replica-diverged-at-ready',
          historyAtReady === 'diverged',
          `${r1} holds W only: history ${historyAtReady} after ready (expected diverged)`,
        ),
        check(
          'replica-diverged-ahead-of-sample',
          historyAhead === 'diverged',
          `${r1} holds W and W2, newer than the primary's sample: history ${historyAhead} (expected diverged)`,
        ),
        check(
          'token-read-detected-not-served',
          detected === TOKEN_READS && served === 0,
          `W's token: ${tokenOutcomes.join('; ')} (expected other-history every time)`,
        ),
        check(
          'tokenless-never-r1',
          tokenlessOnR1 === 0 && tracedOnR1 === 0 && readsWithW === 0,
          `${TOKENLESS_READS} reads without a token: ${tokenlessOnR1} served by ${r1} (${tracedOnR1} reads attempted there), ${readsWithW} read(s) returned W; targets ${JSON.stringify(tally(tokenlessTargets))}`,
        ),
        check(
          'tokenless-served',
          tokenlessErrors.length === 0,
          `reads without a token must be served by the primary: errors ${JSON.stringify(tally(tokenlessErrors))}`,
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
