import { PRIMARY, Session, TokenCodec } from '@tidemark/core';
import { check, errorCode, newOrder, tally, twoReplicas, waitForCatchUp } from '../kit.js';
import type { Scenario } from '../scenario.js';

/** Writes the old primary takes after W, so its sampled position is well past W's. */
const LATER_WRITES_ON_OLD_PRIMARY = 12;
/** Writes the promoted node takes before the stale router reads: past W's offset, below the sample's. */
const OWN_WRITES_ON_PROMOTED = 4;
const TOKEN_READS = 5;
const CONTROL_READS = 4;

/**
 * An app instance that was not told of a failover. R was stopped before write W and the old
 * primary's later writes, then promoted (the old primary stopped) and took writes of its own; the
 * instance's router still names the old primary as primary and R as a replica. R's own writes
 * pass W's offset (on MariaDB, which compares one sequence number per domain, W "is covered")
 * while staying below the old primary's last sampled position, so R does not look ahead of the
 * primary either. R lacks W: a read with W's token must never be served by R as fresh (an
 * error, or the primary, are both fine). The naive control reads R and misses W. On MongoDB,
 * whose replica-set client follows an election by itself, "the primary" the stale router falls
 * back to is R: a fallback its pre-election sample approved must still not serve T without W.
 */
export const promotedBehindStaleConfig: Scenario = {
  name: 'promoted-behind-stale-config',
  summary:
    'router not told of a failover: promoted R (without W, own writes past W) never serves W token as fresh',
  freshCluster: true,
  // On MongoDB the instance's replica-set client follows the election by itself, so its primary
  // reads reach R while its router's last primary sample (past W) predates the election: the
  // same promise, reached by another path.
  needs: ['kill', 'promote'],
  async run(ctx) {
    const { cluster, workload } = ctx;
    const [promoted, other] = twoReplicas(ctx);
    const oldPrimary = cluster.primary().name;
    const tokens = new TokenCodec();

    // The app instance: configured for the topology before the failover, never reconfigured.
    const stale = await ctx.router({}, { unreplicatedWrites: true });
    // The control: the same stale configuration without Tidemark (replicas in turn).
    const naive = ctx.naive();
    await waitForCatchUp(ctx);
    await cluster.stop(other);
    await cluster.stop(promoted);
    const writer = new Session();
    const w = newOrder(ctx, ctx.nextId(), 'lost in the failover');
    await stale.router.write(writer, (c) => workload.insertOrder(c, w));
    const token = tokens.encode(writer.toTokenData());
    const carried = () => Session.fromToken(tokens.decode(token));
    for (let i = 0; i < LATER_WRITES_ON_OLD_PRIMARY; i++) {
      await stale.router.write(new Session(), (c) =>
        workload.insertOrder(c, newOrder(ctx, ctx.nextId(), 'later on the old primary')),
      );
    }
    // The stale router's primary sample (a probe, as its monitor takes every interval) now
    // includes every write above.
    await stale.router.monitor.refreshPrimary();

    // The old primary goes first: R, started again while it runs, would fetch W from it.
    await cluster.stop(oldPrimary);
    await cluster.start(promoted);
    await cluster.promote(promoted);
    await ctx.resetInspector();
    const direct = ctx.adapter({ unreplicatedWrites: true });
    let ownWrites = 0;
    for (let i = 0; i < OWN_WRITES_ON_PROMOTED; i++) {
      const order = newOrder(ctx, ctx.nextId(), 'own write of the promoted node');
      const written = await direct.write((c) => workload.insertOrder(c, order), {});
      if (written.position !== undefined) ownWrites++;
    }
    const onPromoted = await ctx
      .inspector()
      .read(PRIMARY, (c) => workload.ordersOf(c, w.customer), {});
    const lostForReal = !onPromoted.value.includes(w.id);
    // The stale router sees the promoted node's new state before it reads.
    await stale.router.monitor.refresh(promoted);
    const promotedHistory = stale.router.monitor.state(promoted)?.history ?? 'absent';
    // The hard case (MariaDB): the sample of the old primary "covers" R's new position too.
    const sample = stale.router.monitor.primaryPosition();
    const applied = stale.router.monitor.state(promoted)?.applied;
    const belowSample =
      sample !== undefined &&
      applied !== undefined &&
      direct.codec.compare(sample, applied) === 'covered';

    const outcomes: string[] = [];
    let servedWithoutW = 0;
    for (let i = 0; i < TOKEN_READS; i++) {
      try {
        const { value, decision } = await stale.router.readDetailed(carried(), (c) =>
          workload.ordersOf(c, w.customer),
        );
        const hasW = value.includes(w.id);
        if (!hasW) servedWithoutW++;
        outcomes.push(`${decision.target}/${decision.reason} ${hasW ? 'with' : 'without'} W`);
      } catch (error) {
        outcomes.push(errorCode(error));
      }
    }
    ctx.log(
      `promoted ${promoted}: history ${promotedHistory}; token reads ${JSON.stringify(tally(outcomes))}`,
    );
    const servedByPromoted = stale.reads.filter((r) => r.target === promoted).length;

    // Then the operator reconfigures: the session's first request there is a write. Its position
    // (R's numbering, past W's) "covers" T; the router must still report W as lost.
    const current = await ctx.router({}, { unreplicatedWrites: true });
    let lostWriteOutcome: string;
    let lostWriteReported = false;
    try {
      const w2 = newOrder(ctx, w.customer, 'first write after the reconfiguration');
      const { lostWrite } = await current.router.writeDetailed(carried(), (c) =>
        workload.insertOrder(c, w2),
      );
      lostWriteReported = lostWrite !== undefined;
      lostWriteOutcome =
        lostWrite === undefined ? 'no lostWrite' : `lostWrite ${lostWrite.verdict}`;
    } catch (error) {
      lostWriteOutcome = errorCode(error);
    }

    // Control: an app that reads R as a replica sees the session's own write missing, silently.
    let controlMisses = 0;
    const controlOutcomes: string[] = [];
    for (let i = 0; i < CONTROL_READS; i++) {
      try {
        const { value, target } = await naive.read((c) => workload.ordersOf(c, w.customer));
        if (!value.includes(w.id)) controlMisses++;
        controlOutcomes.push(`${target}: W ${value.includes(w.id) ? 'present' : 'absent'}`);
      } catch (error) {
        controlOutcomes.push(errorCode(error));
      }
    }

    const m = stale.router.metrics();
    return {
      counts: {
        router_misses: servedWithoutW,
        control_misses: controlMisses,
        fallbacks: m.primaryReads,
        waits: m.waits,
        other_history_detected: m.otherHistory,
        reads_on_promoted: servedByPromoted,
        lost_write_reported: lostWriteReported ? 1 : 0,
        promoted_below_sample: belowSample ? 1 : 0,
      },
      checks: [
        check(
          'lost-write-is-lost',
          lostForReal,
          `W ${lostForReal ? 'is absent from' : 'survived on'} the promoted node ${promoted} (the setup must lose it)`,
        ),
        check(
          'promoted-node-wrote',
          ownWrites === OWN_WRITES_ON_PROMOTED,
          `${ownWrites} of ${OWN_WRITES_ON_PROMOTED} writes on ${promoted} captured a position`,
        ),
        check(
          'never-served-without-w',
          servedWithoutW === 0 && servedByPromoted === 0,
          `W's token through the router that still names ${oldPrimary} as primary: ${JSON.stringify(tally(outcomes))}; ${servedByPromoted} read(s) ran on ${promoted} (history there: ${promotedHistory})`,
        ),
        check(
          'write-after-reconfiguration-reports-w-lost',
          lostWriteReported,
          `the session's first write through a router of the new topology: ${lostWriteOutcome} (expected a lostWrite for T)`,
        ),
        check(
          'control-misses-w',
          controlMisses > 0,
          `naive reads: ${controlOutcomes.join('; ')} (must miss W on ${promoted})`,
        ),
      ],
    };
  },
};
