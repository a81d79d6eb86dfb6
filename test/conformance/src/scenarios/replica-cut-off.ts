import { Session, TokenCodec } from '@tidemark/core';
import {
  check,
  errorCode,
  errorText,
  newOrder,
  sleep,
  tally,
  twoReplicas,
  waitForCatchUp,
} from '../kit.js';
import type { Scenario } from '../scenario.js';

/** The router's staleness limit for this scenario (health.maxLagSeconds). */
const LIMIT_SECONDS = 1;
const PROBE_INTERVAL_MS = 200;
/** After the cut, the router must have stopped trusting R1 by then: limit + a probe + slack. */
const GRACE_MS = LIMIT_SECONDS * 1000 + PROBE_INTERVAL_MS + 800;
/** Writes and reads go on this long after the grace period. */
const CHECKED_MS = 2500;
/** A read is stale when it lacks a row committed this long before it started (limit + slack). */
const STALE_AFTER_MS = LIMIT_SECONDS * 1000 + 250;
const PAUSE_MS = 20;

interface Written {
  readonly id: number;
  readonly at: number;
}

/** Newest row committed at least STALE_AFTER_MS before `at`. */
function newestDue(rows: readonly Written[], at: number): Written | undefined {
  for (let i = rows.length - 1; i >= 0; i--) if (rows[i]!.at <= at - STALE_AFTER_MS) return rows[i];
  return undefined;
}

/**
 * A replica cut off from its primary (its receiver stopped; it runs and serves reads). It has
 * applied everything it received, so its own lag report says 0, while the primary keeps
 * committing. Invariant 9: staleness is measured against the primary, so with
 * `health.maxLagSeconds: 1` the router stops reading R1 within about the limit plus a probe
 * interval: reads without a token, and reads with a token from before the cut (which R1
 * "covers"), then go to R2 or the primary and never miss a row committed longer ago than the
 * limit. The naive control keeps reading R1 and misses rows. R1 is reconnected at the end.
 */
export const replicaCutOff: Scenario = {
  name: 'replica-cut-off',
  summary:
    'cut R1 off from the primary under writes: after limit + probe interval no read goes to R1, none is stale',
  freshCluster: true,
  needs: ['cut-off'],
  async run(ctx) {
    const { cluster, workload } = ctx;
    const [r1] = twoReplicas(ctx);
    const tokens = new TokenCodec();
    const handle = await ctx.router({
      health: { maxLagSeconds: LIMIT_SECONDS },
      monitorOptions: { intervalMs: PROBE_INTERVAL_MS },
    });
    const naive = ctx.naive();
    const customer = ctx.nextId();
    const rows: Written[] = [];
    const writer = new Session();
    const write = async (note: string) => {
      const order = newOrder(ctx, customer, note);
      await handle.router.write(writer, (c) => workload.insertOrder(c, order));
      rows.push({ id: order.id, at: Date.now() });
    };

    // A token from before the cut: R1 has applied it, so a token router thinks R1 covers it.
    await write('before the cut');
    await waitForCatchUp(ctx);
    const oldToken = tokens.encode(writer.toTokenData());

    let cutAt = 0;
    let r1ReadsBeforeGrace = 0;
    let r1ReadsAfterGrace = 0;
    let lastR1ReadMs = -1;
    let staleAfterGrace = 0;
    let checkedReads = 0;
    let controlStale = 0;
    let controlChecked = 0;
    const routerErrors: string[] = [];
    const staleExamples: string[] = [];
    const targets: string[] = [];
    let writeErrors = 0;
    let r1AtEnd = 'unknown';
    let caughtUp = 'not tried';

    await cluster.cutOff(r1);
    try {
      cutAt = Date.now();
      const deadline = cutAt + GRACE_MS + CHECKED_MS;
      for (let i = 0; Date.now() < deadline; i++) {
        try {
          await write(`after the cut ${i}`);
        } catch {
          writeErrors++;
        }
        // Alternate: no token, and the token from before the cut.
        const session = i % 2 === 0 ? new Session() : Session.fromToken(tokens.decode(oldToken));
        const started = Date.now();
        const due = newestDue(rows, started);
        const afterGrace = started - cutAt >= GRACE_MS;
        try {
          const { value, decision } = await handle.router.readDetailed(session, (c) =>
            workload.ordersOf(c, customer),
          );
          if (decision.target === r1) {
            lastR1ReadMs = started - cutAt;
            if (afterGrace) r1ReadsAfterGrace++;
            else r1ReadsBeforeGrace++;
          }
          if (afterGrace) {
            checkedReads++;
            targets.push(`${decision.target}/${decision.reason}`);
            if (due && (value[0] ?? 0) < due.id) {
              staleAfterGrace++;
              if (staleExamples.length < 3) {
                staleExamples.push(
                  `${i % 2 === 0 ? 'no token' : 'old token'} at +${started - cutAt} ms on ${decision.target}: missed a row ${started - due.at} ms old`,
                );
              }
            }
          }
        } catch (error) {
          routerErrors.push(errorCode(error));
        }
        try {
          const { value } = await naive.read((c) => workload.ordersOf(c, customer));
          if (afterGrace) {
            controlChecked++;
            if (due && (value[0] ?? 0) < due.id) controlStale++;
          }
        } catch {
          if (afterGrace) controlChecked++;
        }
        await sleep(PAUSE_MS);
      }
      // The cut was real: R1 still lacks the newest row.
      const onR1 = await ctx.inspector().read(r1, (c) => workload.ordersOf(c, customer), {});
      const newest = rows[rows.length - 1]!;
      r1AtEnd = onR1.value.includes(newest.id) ? 'has the newest row' : 'lacks the newest row';
    } finally {
      await cluster.reconnect(r1);
    }
    try {
      await waitForCatchUp(ctx);
      caughtUp = 'yes';
    } catch (error) {
      caughtUp = errorText(error);
    }

    const m = handle.router.metrics();
    return {
      counts: {
        router_misses: staleAfterGrace + r1ReadsAfterGrace,
        control_misses: controlStale,
        fallbacks: m.primaryReads,
        waits: m.waits,
        writes: rows.length,
        checked_reads: checkedReads,
        reads_on_cut_replica_before_grace: r1ReadsBeforeGrace,
        reads_on_cut_replica_after_grace: r1ReadsAfterGrace,
        last_cut_replica_read_ms: lastR1ReadMs,
        router_errors: routerErrors.length,
        control_checked: controlChecked,
      },
      checks: [
        check(
          'cut-is-real',
          r1AtEnd === 'lacks the newest row' && writeErrors === 0,
          `${r1} ${r1AtEnd} after ${rows.length} writes (${writeErrors} write errors)`,
        ),
        check(
          'stops-reading-cut-replica',
          r1ReadsAfterGrace === 0,
          `${r1ReadsAfterGrace} reads served by ${r1} later than ${GRACE_MS} ms after the cut (last at +${lastR1ReadMs} ms; limit ${LIMIT_SECONDS} s, probe every ${PROBE_INTERVAL_MS} ms)`,
        ),
        check(
          'not-stale-after-limit',
          staleAfterGrace === 0 && checkedReads > 0,
          `${staleAfterGrace} of ${checkedReads} reads after the grace period missed a row older than ${STALE_AFTER_MS} ms: ${staleExamples.join('; ') || 'none'}; targets ${JSON.stringify(tally(targets))}`,
        ),
        check(
          'reads-served',
          routerErrors.length === 0,
          `router read errors: ${JSON.stringify(tally(routerErrors))} (R2 or the primary can serve every read)`,
        ),
        check('reconnected', caughtUp === 'yes', `${r1} after reconnect: caught up ${caughtUp}`),
        check(
          'control-stale',
          controlStale > 0,
          `naive reads after the grace period: ${controlStale} of ${controlChecked} missed a row older than ${STALE_AFTER_MS} ms (must be > 0: it keeps reading ${r1})`,
        ),
      ],
    };
  },
};
