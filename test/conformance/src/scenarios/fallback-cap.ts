import { ErrorCode, PRIMARY, ReplicasBehindError, Session } from '@tidemark/core';
import type { RouterHandle, ScenarioContext } from '../context.js';
import {
  check,
  errorCode,
  errorText,
  isRouterError,
  newOrder,
  tally,
  tidemarkErrorIn,
  twoReplicas,
} from '../kit.js';
import type { Scenario } from '../scenario.js';
import type { Check, Order } from '../types.js';

const CAP = { burst: 3, ratePerSecond: 0 };
const READS = 10;

type ReadResult =
  | { ok: true; target: string; reason: string; stale: boolean; miss: boolean }
  | { ok: false; error: unknown };

/** Write one order per session, then read each back once, in order. */
async function writeThenReadAll<P, C>(
  ctx: ScenarioContext<P, C>,
  handle: RouterHandle<P, C>,
  label: string,
): Promise<{ results: ReadResult[]; orders: Order[] }> {
  const orders = await ctx.orders(handle);
  const written: Array<{ session: Session; order: Order }> = [];
  for (let i = 0; i < READS; i++) {
    const session = new Session();
    const order = newOrder(ctx, ctx.nextId(), `${label} ${i}`);
    await orders.insertOrder(session, order);
    written.push({ session, order });
  }
  const results: ReadResult[] = [];
  for (const { session, order } of written) {
    try {
      const { ids, decision } = await orders.ordersOf(session, order.customer);
      results.push({
        ok: true,
        target: decision.target,
        reason: decision.reason,
        stale: decision.stale,
        miss: !ids.includes(order.id),
      });
    } catch (error) {
      // An integration may wrap it (Drizzle's DrizzleQueryError): the router's error is the cause.
      results.push({ ok: false, error: tidemarkErrorIn(error) ?? error });
    }
  }
  return { results, orders: written.map((w) => w.order) };
}

function summarize(results: ReadResult[]): string {
  return results
    .map((r) => (r.ok ? `${r.target}/${r.reason}${r.stale ? '/stale' : ''}` : errorCode(r.error)))
    .join(', ');
}

/**
 * The fallback cap and both degraded modes, with replay paused so every read needs the primary.
 * Cap: burst 3, no refill. Degraded 'error': reads 1-3 go to the primary, the rest throw a
 * retryable ReplicasBehindError. Degraded 'stale': reads 4+ are served by a replica and labelled
 * stale, and they really miss the write (the label is honest). Also checks that a read sent to
 * the primary runs read-only (invariant 7).
 */
export const fallbackCap: Scenario = {
  name: 'fallback-cap',
  summary:
    "cap burst=3: 3 primary reads, then ReplicasBehindError ('error') or labelled stale reads ('stale')",
  freshCluster: false,
  needs: ['pause'],
  async run(ctx) {
    const { cluster, workload } = ctx;
    for (const name of twoReplicas(ctx)) await cluster.pauseReplay(name);
    const checks: Check[] = [];

    // Degraded 'error'.
    const errorMode = await ctx.router({
      fallback: CAP,
      degraded: 'error',
      wait: { budgetMs: 50 },
    });
    const strict = await writeThenReadAll(ctx, errorMode, 'cap error');
    const strictHead = strict.results.slice(0, CAP.burst);
    const strictTail = strict.results.slice(CAP.burst);
    const behindErrors = strictTail.filter(
      (r) =>
        !r.ok &&
        r.error instanceof ReplicasBehindError &&
        r.error.code === ErrorCode.ReplicasBehind &&
        r.error.retryable,
    );
    checks.push(
      check(
        'error-mode-first-reads-on-primary',
        strictHead.every((r) => r.ok && r.target === PRIMARY && !r.miss),
        `first ${CAP.burst} reads: ${summarize(strictHead)} (expected primary, own write visible)`,
      ),
      check(
        'error-mode-rest-replicas-behind',
        behindErrors.length === strictTail.length,
        `reads ${CAP.burst + 1}-${READS}: ${summarize(strictTail)} (expected retryable ${ErrorCode.ReplicasBehind})`,
      ),
    );

    // Degraded 'stale'.
    const staleMode = await ctx.router({
      fallback: CAP,
      degraded: 'stale',
      wait: { budgetMs: 50 },
    });
    const lenient = await writeThenReadAll(ctx, staleMode, 'cap stale');
    const lenientHead = lenient.results.slice(0, CAP.burst);
    const lenientTail = lenient.results.slice(CAP.burst);
    const staleReads = lenientTail.filter(
      (r) => r.ok && r.stale && r.reason === 'degraded-stale' && r.target !== PRIMARY,
    );
    const staleMisses = staleReads.filter((r) => r.ok && r.miss).length;
    const freshMisses = [...strict.results, ...lenient.results].filter(
      (r) => r.ok && !r.stale && r.miss,
    ).length;
    checks.push(
      check(
        'stale-mode-first-reads-on-primary',
        lenientHead.every((r) => r.ok && r.target === PRIMARY && !r.miss),
        `first ${CAP.burst} reads: ${summarize(lenientHead)}`,
      ),
      check(
        'stale-mode-rest-labelled-stale',
        staleReads.length === lenientTail.length,
        `reads ${CAP.burst + 1}-${READS}: ${summarize(lenientTail)} (expected replica/degraded-stale/stale)`,
      ),
      check(
        'stale-label-honest',
        staleMisses === staleReads.length && staleReads.length > 0,
        `${staleMisses} of ${staleReads.length} stale-labelled reads missed the write (replay is paused, so all must)`,
      ),
      check(
        'no-unlabelled-miss',
        freshMisses === 0,
        `${freshMisses} reads not labelled stale missed the write`,
      ),
    );

    // Control: the naive router (or the integration's own replica helper) misses every one of them.
    const control = await ctx.naiveOrders();
    let controlMisses = 0;
    for (const order of lenient.orders) {
      const ids = await control.ordersOf(order.customer);
      if (!ids.includes(order.id)) controlMisses++;
    }
    checks.push(
      check(
        'control-misses-all',
        controlMisses === READS,
        `the control missed ${controlMisses} of ${READS} (must miss all: replay paused)`,
      ),
    );

    // Invariant 7: a read the router sends to the primary is read-only. The control write shows
    // the same statement succeeds on a read-write primary connection, so its failure below is
    // the read-only mode at work, not a broken statement.
    const naive = ctx.naive();
    let controlWriteError: unknown;
    await naive
      .write((c) => workload.tryWrite(c))
      .catch((error: unknown) => {
        controlWriteError = error;
      });
    const readOnly = await ctx.router({ fallback: { burst: 1, ratePerSecond: 0 } });
    const session = new Session();
    const order = newOrder(ctx, ctx.nextId(), 'read-only probe');
    await readOnly.router.write(session, (c) => workload.insertOrder(c, order));
    let readOnlyError: unknown;
    await readOnly.router
      .read(session, (c) => workload.tryWrite(c))
      .catch((error: unknown) => {
        readOnlyError = error;
      });
    const attempts = readOnly.reads;
    checks.push(
      check(
        'control-write-succeeds',
        controlWriteError === undefined,
        controlWriteError === undefined
          ? 'tryWrite on a read-write primary connection succeeded'
          : `tryWrite failed on the primary's read-write connection: ${errorText(controlWriteError)}`,
      ),
      check(
        'primary-read-is-read-only',
        readOnlyError !== undefined &&
          !isRouterError(readOnlyError) &&
          attempts.length === 1 &&
          attempts[0]?.target === PRIMARY &&
          attempts[0]?.ok === false,
        `write inside a routed read: ${readOnlyError === undefined ? 'succeeded' : errorText(readOnlyError)}; attempts ${JSON.stringify(attempts.map((a) => `${a.target}:${a.ok ? 'ok' : 'failed'}`))} (expected one failed attempt on the primary, not retried, failed by the database or the adapter's read-only connection, not by the router)`,
      ),
    );

    const strictMetrics = errorMode.router.metrics();
    const staleMetrics = staleMode.router.metrics();
    return {
      counts: {
        router_misses: freshMisses,
        control_misses: controlMisses,
        fallbacks: strictMetrics.primaryReads + staleMetrics.primaryReads,
        waits: strictMetrics.waits + staleMetrics.waits,
        replicas_behind_errors: behindErrors.length,
        stale_reads: staleMetrics.staleReads,
        stale_misses: staleMisses,
        cap_rejections: strictMetrics.capRejections + staleMetrics.capRejections,
      },
      checks: [
        ...checks,
        check(
          'metrics-agree',
          strictMetrics.capRejections === strictTail.length &&
            staleMetrics.staleReads === staleReads.length,
          `metrics: capRejections ${strictMetrics.capRejections} (error mode), staleReads ${staleMetrics.staleReads}; outcomes ${JSON.stringify(tally(strict.results.map((r) => (r.ok ? r.target : errorCode(r.error)))))}`,
        ),
      ],
    };
  },
};
