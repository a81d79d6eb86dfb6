import { ErrorCode, type RouteDecision } from '@tidemark/core';
import { CLUSTER_NAME } from '../context.js';
import {
  check,
  errorCode,
  errorText,
  isHistoryUnverified,
  isOtherHistory,
  sleep,
  stageOldHistoryReplica,
  within,
} from '../kit.js';
import type { Scenario } from '../scenario.js';

const FROZEN_READS = 3;
/** A read that has not settled after this long is reported hung. */
const HUNG_MS = 20_000;
/** Fail closed "in time": each read must settle within this (a few probe timeouts). */
const SETTLE_MS = 10_000;
const CONTROL_READS = 2;
const AFTER_THAW_MS = 15_000;

/**
 * The lost-write topology of lost-write-old-history-replica (R1 left on the old history with
 * W), and then the NEW primary freezes (SIGSTOP: it accepts connections and answers nothing),
 * so no history verdict can be had. Invariant 10: reads with W's token are not served as fresh
 * from R1 (which claims to have applied W) and do not move the session onto another history;
 * each ends, in bounded time, with a typed error: TIDEMARK_HISTORY_UNVERIFIED (retryable) or
 * TIDEMARK_OTHER_HISTORY. After the thaw the token is detected as another history's. The naive
 * control reads R1 during the freeze and serves W.
 */
export const historyCheckUnavailable: Scenario = {
  name: 'history-check-unavailable',
  summary:
    'lost-write topology, new primary frozen: token reads -> typed error in bounded time, never W as fresh, token unchanged',
  freshCluster: true,
  needs: ['kill', 'promote-partial', 'freeze'],
  async run(ctx) {
    const { cluster, workload } = ctx;
    const topology = await stageOldHistoryReplica(ctx, 'lost, kept by the old-history replica');
    const { lost, oldHistoryReplica: r1, newPrimary } = topology;
    const readLost = (c: Parameters<typeof workload.ordersOf>[0]) =>
      workload.ordersOf(c, lost.customer);

    // The application's router exists before the primary hangs (it has sampled it once).
    const handle = await ctx.router();
    const session = topology.carried();
    const tokenBefore = session.positionText(CLUSTER_NAME);
    const outcomes: string[] = [];
    const tokenChanges: string[] = [];
    let servedFresh = 0;
    let servedWithW = 0;
    let servedStale = 0;
    let typedErrors = 0;
    let unverifiedErrors = 0;
    let hung = 0;
    let slowest = 0;
    let controlWithW = 0;
    const controlOutcomes: string[] = [];

    await cluster.freeze(newPrimary);
    try {
      for (let i = 0; i < FROZEN_READS; i++) {
        const started = performance.now();
        const result = await within(handle.router.readDetailed(session, readLost), HUNG_MS);
        const ms = performance.now() - started;
        slowest = Math.max(slowest, ms);
        if (result.ok === 'hung') {
          hung++;
          outcomes.push(`no answer after ${HUNG_MS} ms`);
        } else if (result.ok) {
          const { value, decision } = result.value as { value: number[]; decision: RouteDecision };
          const withW = value.includes(lost.id);
          if (withW) servedWithW++;
          if (decision.stale) servedStale++;
          else servedFresh++;
          outcomes.push(
            `served by ${decision.target}/${decision.reason}${decision.stale ? ' (stale)' : ''} with${withW ? '' : 'out'} W in ${Math.round(ms)} ms`,
          );
        } else {
          const typed = isHistoryUnverified(result.error) || isOtherHistory(result.error);
          if (typed) typedErrors++;
          if (isHistoryUnverified(result.error)) unverifiedErrors++;
          outcomes.push(
            `${typed ? errorCode(result.error) : errorText(result.error)} in ${Math.round(ms)} ms`,
          );
        }
        const tokenNow = session.positionText(CLUSTER_NAME);
        if (tokenNow !== tokenBefore) tokenChanges.push(`after read ${i + 1}: ${tokenNow}`);
      }

      // Control: the naive router reads the old-history replica; the frozen primary is no
      // obstacle to it.
      const naive = ctx.naive();
      for (let i = 0; i < CONTROL_READS; i++) {
        const result = await within(naive.read(readLost), HUNG_MS);
        if (result.ok === true) {
          const withW = result.value.value.includes(lost.id);
          if (withW) controlWithW++;
          controlOutcomes.push(`${result.value.target}: W ${withW ? 'present' : 'absent'}`);
        } else {
          controlOutcomes.push(result.ok === 'hung' ? 'hung' : errorText(result.error));
        }
      }
    } finally {
      await cluster.thaw(newPrimary);
    }

    // Once the primary answers again, the verdict can be had: another history.
    let afterThaw = 'not detected';
    let detectedAfterThaw = false;
    const deadline = Date.now() + AFTER_THAW_MS;
    while (!detectedAfterThaw && Date.now() < deadline) {
      const result = await within(
        handle.router.readDetailed(topology.carried(), readLost),
        HUNG_MS,
      );
      if (result.ok === false && isOtherHistory(result.error)) {
        detectedAfterThaw = true;
        afterThaw = 'other-history';
      } else {
        afterThaw =
          result.ok === 'hung'
            ? 'hung'
            : result.ok
              ? `served by ${(result.value as { decision: RouteDecision }).decision.target}`
              : errorCode(result.error);
        await sleep(250);
      }
    }

    const m = handle.router.metrics();
    return {
      counts: {
        router_misses: servedFresh,
        control_misses: controlWithW,
        fallbacks: m.primaryReads,
        waits: m.waits,
        typed_errors: typedErrors,
        history_unverified_errors: unverifiedErrors,
        reads_with_lost_write: servedWithW,
        served_stale: servedStale,
        hung_reads: hung,
        token_changes: tokenChanges.length,
        slowest_read_ms: Math.round(slowest),
      },
      checks: [
        ...topology.setupChecks,
        check(
          'not-served-as-fresh',
          servedFresh === 0 && servedWithW === 0,
          `reads with W's token while ${newPrimary} is frozen: ${outcomes.join('; ')}`,
        ),
        check(
          'typed-error',
          typedErrors === FROZEN_READS,
          `expected ${ErrorCode.HistoryUnverified} (retryable) or ${ErrorCode.OtherHistory} for every read: ${outcomes.join('; ')}`,
        ),
        check(
          'bounded-time',
          hung === 0 && slowest <= SETTLE_MS,
          `slowest read settled in ${Math.round(slowest)} ms (limit ${SETTLE_MS} ms), ${hung} hung`,
        ),
        check(
          'token-unchanged',
          tokenChanges.length === 0,
          `the session must stay on its own history: ${tokenChanges.join('; ') || 'unchanged'}`,
        ),
        check(
          'detected-after-thaw',
          detectedAfterThaw,
          `after thawing ${newPrimary}: ${afterThaw} (expected other-history within ${AFTER_THAW_MS} ms)`,
        ),
        check(
          'control-serves-lost-write',
          controlWithW > 0,
          `naive reads during the freeze: ${controlOutcomes.join('; ')} (must return W from ${r1})`,
        ),
      ],
    };
  },
};
