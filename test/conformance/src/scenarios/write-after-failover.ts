import { type LostWrite, PRIMARY } from '@tidemark/core';
import { CLUSTER_NAME } from '../context.js';
import { check, errorCode, errorText, newOrder, stageOldHistoryReplica } from '../kit.js';
import type { Scenario } from '../scenario.js';

const READS_AFTER = 5;

/**
 * The lost-write topology (R1 left on the old history with W), and the first request of the
 * session holding W's token after the failover is a WRITE W2 through a new router. The router
 * must report that the session's earlier position was lost (`writeDetailed` resolves with
 * `lostWrite`, verdict other-history, and emits 'lost-write'), and must not merge the lost
 * position with W2's: the session's next reads see W2 (read-your-writes), never from R1. The
 * control merges naively (plain `session.raise` of W2's position, today's behaviour) and reads
 * through the naive router: it misses W2 or sees W. The report also says whether R1 "covers"
 * the naively merged token (MariaDB's same-domain merge keeps the lost position).
 */
export const writeAfterFailover: Scenario = {
  name: 'write-after-failover',
  summary:
    'lost-write topology, first request a write W2: lostWrite reported, then reads see W2 and never R1',
  freshCluster: true,
  needs: ['kill', 'promote-partial'],
  async run(ctx) {
    const { workload } = ctx;
    const topology = await stageOldHistoryReplica(ctx, 'lost, kept by the old-history replica');
    const { lost, oldHistoryReplica: r1, newPrimary } = topology;
    const customer = lost.customer;
    const readOwn = (c: Parameters<typeof workload.ordersOf>[0]) => workload.ordersOf(c, customer);

    // MongoDB: with R1 on another history and the old primary down, no majority acknowledges
    // W2 (as on a real set in those minutes); the scenario is about the token, not durability.
    const handle = await ctx.router({}, { unreplicatedWrites: true });
    const events: LostWrite[] = [];
    handle.router.events.on('lost-write', (event) => events.push(event));

    const session = topology.carried();
    const tokenBefore = session.positionText(CLUSTER_NAME);
    const w2 = newOrder(ctx, customer, 'first write after the failover');
    let lostWrite: LostWrite | undefined;
    let writeOutcome: string;
    try {
      const result = await handle.router.writeDetailed(session, (c) => workload.insertOrder(c, w2));
      lostWrite = result.lostWrite;
      writeOutcome = lostWrite
        ? `lostWrite { cluster: ${lostWrite.cluster}, position: ${lostWrite.position}, verdict: ${lostWrite.verdict} }`
        : 'no lostWrite reported';
    } catch (error) {
      writeOutcome = `write failed: ${errorText(error)}`;
    }
    const tokenAfterWrite = session.positionText(CLUSTER_NAME);

    // The session's next reads: read-your-writes on the new history, never the old replica.
    const readOutcomes: string[] = [];
    let missedW2 = 0;
    let sawW = 0;
    let onR1 = 0;
    let readErrors = 0;
    let anomalies = 0;
    for (let i = 0; i < READS_AFTER; i++) {
      try {
        const { value, decision } = await handle.router.readDetailed(session, readOwn);
        const hasW2 = value.includes(w2.id);
        const hasW = value.includes(lost.id);
        if (!hasW2) missedW2++;
        if (hasW) sawW++;
        if (decision.target === r1) onR1++;
        if (!hasW2 || hasW || decision.target === r1) anomalies++;
        readOutcomes.push(
          `${decision.target}/${decision.reason}: W2 ${hasW2 ? 'seen' : 'MISSED'}${hasW ? ', W seen' : ''}`,
        );
      } catch (error) {
        readErrors++;
        readOutcomes.push(errorCode(error));
      }
    }
    const onNewPrimary = await ctx
      .inspector()
      .read(PRIMARY, readOwn, {})
      .then((r) => r.value.includes(w2.id));

    // Control: today's merge (session.raise of the new write's position) and a naive read.
    // (MongoDB: a w:1 write, as for the router above.)
    const adapter = ctx.target.createAdapter(ctx.cluster, { unreplicatedWrites: true });
    let mergeCoveredByR1 = 'unknown';
    let controlMisses = 0;
    const controlOutcomes: string[] = [];
    try {
      const control = topology.carried();
      const w2c = newOrder(ctx, customer, 'control write after the failover');
      const written = await adapter.write((c) => workload.insertOrder(c, w2c), {});
      control.raise(CLUSTER_NAME, adapter.codec, written.position);
      const merged = control.position(CLUSTER_NAME, adapter.codec)!;
      try {
        const probe = await adapter.probe(r1, {
          signal: AbortSignal.timeout(2000),
          primary: undefined,
        });
        mergeCoveredByR1 = adapter.codec.compare(probe.applied, merged);
      } catch (error) {
        mergeCoveredByR1 = `probe failed: ${errorText(error)}`;
      }
      const naive = ctx.naive();
      for (let i = 0; i < 2; i++) {
        try {
          const { value, target } = await naive.read(readOwn);
          const hasW2 = value.includes(w2c.id);
          const hasW = value.includes(lost.id);
          if (!hasW2 || hasW) controlMisses++;
          controlOutcomes.push(
            `${target}: W2 ${hasW2 ? 'seen' : 'missed'}, W ${hasW ? 'seen' : 'absent'}`,
          );
        } catch (error) {
          controlOutcomes.push(errorText(error));
        }
      }
    } finally {
      await adapter.close();
    }
    const m = handle.router.metrics();
    return {
      counts: {
        router_misses: anomalies,
        control_misses: controlMisses,
        fallbacks: m.primaryReads,
        waits: m.waits,
        lost_write_reported: lostWrite ? 1 : 0,
        lost_write_events: events.length,
        lost_writes_metric: m.lostWrites,
        reads_missing_w2: missedW2,
        reads_with_lost_write: sawW,
        reads_on_old_history: onR1,
        read_errors: readErrors,
        control_merge_covered_by_old_history: mergeCoveredByR1 === 'covered' ? 1 : 0,
      },
      checks: [
        ...topology.setupChecks,
        check(
          'lost-write-reported',
          lostWrite !== undefined &&
            lostWrite.cluster === CLUSTER_NAME &&
            lostWrite.position === tokenBefore &&
            lostWrite.verdict === 'other-history',
          `writeDetailed: ${writeOutcome} (expected lostWrite for cluster ${CLUSTER_NAME}, position ${tokenBefore}, verdict other-history: the new primary ${newPrimary} answers)`,
        ),
        check(
          'lost-write-event',
          events.length === 1 && m.lostWrites === 1,
          `'lost-write' events: ${events.length}, metrics().lostWrites ${m.lostWrites} (expected 1 and 1)`,
        ),
        check(
          'w2-committed',
          onNewPrimary,
          `W2 ${onNewPrimary ? 'is' : 'is NOT'} on the new primary ${newPrimary}`,
        ),
        check(
          'read-your-write-after-failover',
          missedW2 === 0 && sawW === 0 && onR1 === 0 && readErrors === 0,
          `the session's reads after W2: ${readOutcomes.join('; ')} (token before the write ${tokenBefore}, after ${tokenAfterWrite})`,
        ),
        check(
          'control-misses',
          controlMisses > 0,
          `naive merge + naive reads: ${controlOutcomes.join('; ')}; ${r1} compared with the merged token: ${mergeCoveredByR1} (must miss W2 or show W)`,
        ),
      ],
    };
  },
};
