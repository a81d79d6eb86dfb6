// The adapter contract: what every adapter must do at its own boundary, checked once for all of
// them on their real clusters (the simulator for mongo-sim). Each check comes with a control
// that shows it could fail.
import { isTidemarkError, PRIMARY, Session } from '@tidemark/core';
import type { Adapter } from '@tidemark/core/adapter';
import { CLUSTER_NAME } from './context.js';
import { check, errorCode, errorText, newOrder, twoReplicas, waitUntilApplied } from './kit.js';
import type { Scenario } from './scenario.js';
import type { Check } from './types.js';

/** The stable code every adapter uses for a closed adapter. */
const CLOSED = 'TIDEMARK_CLOSED';
/** Adapters keep their own prefix (`TIDEMARK_PG_`, `TIDEMARK_MYSQL_`, `TIDEMARK_MONGO_`). */
const LEFT_OPEN_SUFFIX = '_TRANSACTION_LEFT_OPEN';

/** Settle `work`: its error, or undefined when it succeeded. */
async function failure(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
    return undefined;
  } catch (error) {
    return error ?? new Error('rejected without a reason');
  }
}

function noSignal(ms = 10_000): AbortSignal {
  return AbortSignal.timeout(ms);
}

/** What the adapter says about retrying `error`; the router's default retries everything. */
function retryable<P, C>(adapter: Adapter<P, C>, error: unknown): boolean {
  return adapter.isRetryable ? adapter.isRetryable(error) : true;
}

/**
 * A read observes, after reading, a position at least as new as what it saw: on a replica and
 * on the primary, and through the router (which settles it from a later probe) the session token
 * covers the write the read showed. Control: the replica's probe from before the write does not
 * cover it, so a position taken before the read would not do.
 */
export const contractReadObserves: Scenario = {
  name: 'contract-read-observes',
  summary: 'a read observes a position covering what it saw (replica, primary, router session)',
  freshCluster: false,
  async run(ctx) {
    const { workload } = ctx;
    const adapter = ctx.adapter();
    const [replica] = twoReplicas(ctx);
    const before = await adapter.probe(replica, { signal: noSignal(), primary: undefined });
    const customer = ctx.nextId();
    const order = newOrder(ctx, customer, 'contract observe');
    const { position: written } = await adapter.write((c) => workload.insertOrder(c, order), {});
    if (written === undefined)
      throw new Error('A write without capture: false returned no position.');
    await waitUntilApplied(ctx, replica, written);
    const codec = adapter.codec;
    const covers = (observed: unknown) =>
      observed !== undefined && codec.compare(observed as never, written) === 'covered';

    const onReplica = await adapter.read(replica, (c) => workload.ordersOf(c, customer), {});
    const onPrimary = await adapter.read(PRIMARY, (c) => workload.ordersOf(c, customer), {});

    // Through the router: reads are not asked to observe; the session settles from a probe.
    const { router } = await ctx.router({ monitorOptions: { intervalMs: 100 } });
    const session = new Session();
    const routed = await router.readDetailed(session, (c) => workload.ordersOf(c, customer));
    await session.settled();
    const settled = session.position(CLUSTER_NAME, codec);

    const controlCovered = codec.compare(before.applied, written) === 'covered';
    return {
      counts: {
        control_sample_covered: controlCovered ? 1 : 0,
        router_read_on_replica: routed.decision.target === PRIMARY ? 0 : 1,
      },
      checks: [
        check(
          'replica-read-sees-write',
          onReplica.value.includes(order.id),
          `replica ${replica} returned ${JSON.stringify(onReplica.value)}`,
        ),
        check(
          'replica-read-observes-after',
          covers(onReplica.observed),
          `observed ${onReplica.observed === undefined ? 'nothing' : codec.encode(onReplica.observed)}, write at ${codec.encode(written)}`,
        ),
        check(
          'primary-read-observes-after',
          onPrimary.value.includes(order.id) && covers(onPrimary.observed),
          `primary returned ${JSON.stringify(onPrimary.value)}, observed ${onPrimary.observed === undefined ? 'nothing' : codec.encode(onPrimary.observed)}`,
        ),
        check(
          'router-session-settles',
          routed.value.includes(order.id) && covers(settled),
          `routed read on ${routed.decision.target} returned ${JSON.stringify(routed.value)}; settled token ${settled === undefined ? 'none' : codec.encode(settled)}`,
        ),
        check(
          'control-sample-before-read-is-behind',
          !controlCovered,
          `the probe from before the write ${controlCovered ? 'already covered' : 'does not cover'} it`,
        ),
      ],
    };
  },
};

/**
 * Reads run read-only wherever they go, the primary fallback included (invariant 7), in plain
 * statements and inside an explicit transaction; the refusal is not retried. Control: the same
 * write succeeds on the adapter's write path, so the refusal is the read-only mode at work.
 */
export const contractReadOnly: Scenario = {
  name: 'contract-read-only',
  summary: 'writes inside reads fail on replicas and on the primary fallback, not retryable',
  freshCluster: false,
  async run(ctx) {
    const { workload } = ctx;
    const ops = ctx.target.contract;
    const adapter = ctx.adapter();
    const [replica] = twoReplicas(ctx);
    const checks: Check[] = [];
    let refusals = 0;
    for (const target of [PRIMARY, replica]) {
      const plain = await failure(() => adapter.read(target, (c) => workload.tryWrite(c), {}));
      const customer = ctx.nextId();
      const inTransaction = await failure(() =>
        adapter.read(
          target,
          (c) => ops.insertInOpenTransaction(c, newOrder(ctx, customer, 'contract read-only')),
          {},
        ),
      );
      const left = await adapter.read(PRIMARY, (c) => workload.ordersOf(c, customer), {});
      for (const [how, error] of [
        ['statement', plain],
        ['transaction', inTransaction],
      ] as const) {
        const refused = error !== undefined && ops.isReadOnlyRefusal(error);
        if (refused) refusals++;
        checks.push(
          check(
            `${target === PRIMARY ? 'primary' : 'replica'}-${how}-refused`,
            refused && !retryable(adapter, error),
            error === undefined
              ? 'the write inside the read succeeded'
              : `${errorText(error)}; retryable ${retryable(adapter, error)}`,
          ),
        );
      }
      checks.push(
        check(
          `${target === PRIMARY ? 'primary' : 'replica'}-nothing-written`,
          left.value.length === 0,
          `rows of the refused write on the primary: ${JSON.stringify(left.value)}`,
        ),
      );
    }
    const control = await failure(() => adapter.write((c) => workload.tryWrite(c), {}));
    checks.push(
      check(
        'control-write-path-accepts',
        control === undefined,
        control === undefined ? 'the same write succeeds as a write' : errorText(control),
      ),
    );
    return { counts: { refusals, control_write_failed: control === undefined ? 0 : 1 }, checks };
  },
};

/**
 * A `transaction: false` write whose callback leaves a transaction open fails with the adapter's
 * `*_TRANSACTION_LEFT_OPEN` code (not retryable), its write is rolled back, and the next write
 * commits on its own. Control: a committed write is visible to the same check, so an absent row
 * is the rollback.
 */
export const contractNoLeakedTransaction: Scenario = {
  name: 'contract-no-leaked-transaction',
  summary: 'a write that leaves a transaction open is refused and rolled back; nothing leaks',
  freshCluster: false,
  async run(ctx) {
    const { workload } = ctx;
    const ops = ctx.target.contract;
    // One connection: the writes after the refused one reuse the connection it ran on.
    const adapter = ctx.adapter({ singleConnection: true });
    const customer = ctx.nextId();
    const leaked = newOrder(ctx, customer, 'contract left open');
    const error = await failure(() =>
      adapter.write((c) => ops.insertInOpenTransaction(c, leaked), { transaction: false }),
    );
    const next = newOrder(ctx, customer, 'contract next write');
    for (let i = 0; i < 3; i++) {
      const order = i === 0 ? next : newOrder(ctx, customer, `contract next ${i}`);
      await adapter.write((c) => workload.insertOrder(c, order), {});
    }
    const control = newOrder(ctx, customer, 'contract committed');
    await adapter.write((c) => workload.insertOrder(c, control), { transaction: false });
    const ids = (await adapter.read(PRIMARY, (c) => workload.ordersOf(c, customer), {})).value;
    const code = isTidemarkError(error) ? error.code : errorCode(error);
    const checks: Check[] = [
      check(
        'refused-with-code',
        isTidemarkError(error) && code.endsWith(LEFT_OPEN_SUFFIX),
        error === undefined ? 'the write succeeded' : `${code}: ${errorText(error)}`,
      ),
      check(
        'not-retryable',
        isTidemarkError(error) && !error.retryable && !retryable(adapter, error),
        `retryable ${isTidemarkError(error) ? error.retryable : 'n/a'}, adapter says ${retryable(adapter, error)}`,
      ),
      check('next-write-committed', ids.includes(next.id), `rows: ${JSON.stringify(ids)}`),
      check('control-committed-visible', ids.includes(control.id), `rows: ${JSON.stringify(ids)}`),
    ];
    const reason = ops.noRollbackReason;
    if (reason === undefined) {
      checks.push(
        check(
          'left-open-write-rolled-back',
          !ids.includes(leaked.id),
          `rows: ${JSON.stringify(ids)}; the left-open insert was ${leaked.id}`,
        ),
      );
    } else {
      ctx.log(
        `conformance target=${ctx.target.name} scenario=contract-no-leaked-transaction rollback NOT CHECKED: ${reason}`,
      );
    }
    return {
      counts: {
        left_open_row_present: ids.includes(leaked.id) ? 1 : 0,
        rollback_checked: reason === undefined ? 1 : 0,
      },
      checks,
    };
  },
};

/**
 * Errors are classified for the router's one retry: an unreachable replica (read and probe) is
 * retryable, a malformed statement is not. Control: the router's default (no classification)
 * retries every error, which gets the malformed statement wrong.
 */
export const contractRetryable: Scenario = {
  name: 'contract-retryable',
  summary: 'connection failures are retryable, query errors are not',
  freshCluster: false,
  async run(ctx) {
    const ops = ctx.target.contract;
    const adapter = ctx.adapter({ unreachableReplica: 'gone' });
    const refused = await failure(() =>
      adapter.read('gone', (c) => ctx.workload.ordersOf(c, 1), {}),
    );
    const probe = await failure(() =>
      adapter.probe('gone', { signal: noSignal(), primary: undefined }),
    );
    const syntax = await failure(() => adapter.read(PRIMARY, (c) => ops.badQuery(c), {}));
    const describe = (error: unknown) =>
      error === undefined
        ? 'it succeeded'
        : `${errorText(error)}; retryable ${retryable(adapter, error)}`;
    const defaultRetriesSyntax = syntax !== undefined;
    return {
      counts: { control_default_retries_query_error: defaultRetriesSyntax ? 1 : 0 },
      checks: [
        check(
          'classifies-errors',
          adapter.isRetryable !== undefined,
          'the adapter supplies isRetryable',
        ),
        check(
          'unreachable-read-retryable',
          refused !== undefined && retryable(adapter, refused),
          describe(refused),
        ),
        check(
          'unreachable-probe-retryable',
          probe !== undefined && retryable(adapter, probe),
          describe(probe),
        ),
        check(
          'query-error-not-retryable',
          syntax !== undefined && !retryable(adapter, syntax),
          describe(syntax),
        ),
        check(
          'control-default-retries-query-error',
          defaultRetriesSyntax,
          'without the adapter, the router would retry the malformed statement',
        ),
      ],
    };
  },
};

/**
 * A read stops when its signal aborts: it rejects with the signal's reason within 2 s (the
 * statement would run 5 s), the reason is not retried, a signal aborted before the read keeps the
 * callback from running, and the next read works on a pool of one connection (so the aborted
 * connection was replaced). Control: the same slow read without a signal
 * really takes its time.
 */
export const contractAbort: Scenario = {
  name: 'contract-abort',
  summary: 'a read aborted by its signal rejects with the reason at once; the adapter recovers',
  freshCluster: false,
  async run(ctx) {
    const ops = ctx.target.contract;
    // One connection: the read after the abort works only if the aborted one was replaced.
    const adapter = ctx.adapter({ singleConnection: true });
    const [replica] = twoReplicas(ctx);
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    setTimeout(() => controller.abort(reason), 100);
    const started = performance.now();
    const error = await failure(() =>
      adapter.read(replica, (c) => ops.slowRead(c, 5), { signal: controller.signal }),
    );
    const abortedMs = performance.now() - started;

    const early = new AbortController();
    const earlyReason = new Error('gave up before the read');
    early.abort(earlyReason);
    let ran = false;
    const earlyError = await failure(() =>
      adapter.read(
        replica,
        async () => {
          ran = true;
        },
        { signal: early.signal },
      ),
    );
    const after = await adapter.read(replica, async () => 'ok', {});

    const controlStarted = performance.now();
    await adapter.read(replica, (c) => ops.slowRead(c, 1), {});
    const controlMs = performance.now() - controlStarted;
    return {
      counts: { aborted_ms: Math.round(abortedMs), control_ms: Math.round(controlMs) },
      checks: [
        check(
          'rejects-with-reason',
          error === reason,
          `rejected with ${error === undefined ? 'nothing (it succeeded)' : errorText(error)}`,
        ),
        check('rejects-within-2s', abortedMs < 2000, `${Math.round(abortedMs)} ms`),
        check(
          'reason-not-retryable',
          !retryable(adapter, reason),
          `retryable ${retryable(adapter, reason)}`,
        ),
        check(
          'aborted-before-start',
          earlyError === earlyReason && !ran,
          `rejected with ${earlyError === undefined ? 'nothing' : errorText(earlyError)}; callback ran ${ran}`,
        ),
        check('next-read-works', after.value === 'ok', `next read returned ${String(after.value)}`),
        check(
          'control-slow-read-is-slow',
          controlMs >= 900,
          `a 1 s read without a signal took ${Math.round(controlMs)} ms`,
        ),
      ],
    };
  },
};

/**
 * After `close`, reads, writes, probes and waits throw `TIDEMARK_CLOSED`, and closing again
 * resolves. `waitFor` is always present (answering `unsupported` where the server cannot wait).
 * Control: the same calls work before the close.
 */
export const contractClosed: Scenario = {
  name: 'contract-closed',
  summary: 'a closed adapter refuses every operation with TIDEMARK_CLOSED; close is idempotent',
  freshCluster: false,
  async run(ctx) {
    const { workload } = ctx;
    const adapter = ctx.adapter();
    const [replica] = twoReplicas(ctx);
    const customer = ctx.nextId();
    const calls = {
      read: () => adapter.read(PRIMARY, (c) => workload.ordersOf(c, customer), {}),
      write: () =>
        adapter.write((c) => workload.insertOrder(c, newOrder(ctx, customer, 'contract')), {}),
      probe: () => adapter.probe(replica, { signal: noSignal(), primary: undefined }),
      probePrimary: () => adapter.probePrimary({ signal: noSignal() }),
    };
    const hasWait = typeof adapter.waitFor === 'function';
    const open: Record<string, unknown> = {};
    for (const [name, call] of Object.entries(calls)) open[name] = await failure(call);
    const position = await adapter.probePrimary({ signal: noSignal() });
    const waitOpen = hasWait
      ? await adapter.waitFor!(replica, position, 200, { signal: noSignal() })
      : undefined;

    await adapter.close();
    const closed: Record<string, unknown> = {};
    for (const [name, call] of Object.entries(calls)) closed[name] = await failure(call);
    closed['waitFor'] = hasWait
      ? await failure(() => adapter.waitFor!(replica, position, 200, { signal: noSignal() }))
      : undefined;
    const again = await failure(() => adapter.close());

    const checks: Check[] = [
      check(
        'waitFor-always-present',
        hasWait && waitOpen !== undefined,
        hasWait ? `before close it answered ${waitOpen?.outcome}` : 'no waitFor',
      ),
    ];
    for (const [name, error] of Object.entries(open)) {
      checks.push(
        check(
          `control-${name}-works-open`,
          error === undefined,
          error === undefined ? 'ok' : errorText(error),
        ),
      );
    }
    for (const [name, error] of Object.entries(closed)) {
      checks.push(
        check(
          `${name}-refused-closed`,
          isTidemarkError(error) && error.code === CLOSED,
          error === undefined
            ? 'it worked after close'
            : `${errorCode(error)}: ${errorText(error)}`,
        ),
      );
    }
    checks.push(
      check('close-idempotent', again === undefined, again === undefined ? 'ok' : errorText(again)),
    );
    return {
      counts: {
        refused_after_close: Object.values(closed).filter(
          (e) => isTidemarkError(e) && e.code === CLOSED,
        ).length,
      },
      checks,
    };
  },
};

/** The adapter contract, in the order the suite runs it (before the scenarios). */
export const adapterContract: readonly Scenario[] = [
  contractReadObserves,
  contractReadOnly,
  contractNoLeakedTransaction,
  contractRetryable,
  contractAbort,
  contractClosed,
];
