import { type Router, Session, TokenCodec } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { BookstoreLoad } from './bookstore.js';
import {
  type AdapterTrips,
  type BenchAdapter,
  type BenchDatabase,
  SEEDED_ROWS,
} from './databases.js';
import type { ReplicationWatch } from './lag.js';
import { closedLoop, type LoopResult, quantiles, warmupSeconds } from './loop.js';
import type { Row, RowDetail } from './report.js';
import {
  type BenchStrategy,
  type DecisionLog,
  ProbeCounter,
  type RawDriver,
  TidemarkStrategy,
} from './strategies.js';

/** Everything the cells share: one cluster, the raw driver and one Tidemark router on it. */
export interface BenchRun<C> {
  readonly db: BenchDatabase<C>;
  readonly cluster: Cluster;
  /** Measured seconds per cell (a warm-up runs before each). */
  readonly seconds: number;
  readonly raw: RawDriver<C>;
  readonly adapter: BenchAdapter<C>;
  readonly router: Router<unknown, C>;
  readonly probes: ProbeCounter<C>;
  readonly decisions: DecisionLog<C>;
  readonly watch: ReplicationWatch<C>;
  /** A router with default options on a fresh adapter (the paused cells start one). */
  newRouter(): Promise<{
    router: Router<unknown, C>;
    decisions: DecisionLog<C>;
    probes: ProbeCounter<C>;
  }>;
  progress(line: string): void;
  emit(row: Row): void;
}

export const READ_CONCURRENCY = [1, 16, 64] as const;
export const WRITE_CONCURRENCY = [1, 16] as const;
export const BOOKSTORE_CONCURRENCY = [1, 16] as const;

/** Warm up, then measure; `beforeMeasure` runs between the two (reset counters there). */
async function measure(
  concurrency: number,
  seconds: number,
  op: (worker: number) => Promise<void>,
  beforeMeasure?: () => void,
): Promise<LoopResult> {
  await closedLoop(concurrency, warmupSeconds(seconds), op);
  beforeMeasure?.();
  return closedLoop(concurrency, seconds, op);
}

function baseRow(
  cell: Row['cell'],
  variant: string,
  concurrency: number,
  result: LoopResult,
  raw: Row | undefined,
  detail: RowDetail,
  errors?: number,
): Row {
  const opsPerSecond = result.ops / result.seconds;
  const { p50, p99 } = quantiles(result.latencies);
  return {
    cell,
    variant,
    concurrency,
    seconds: result.seconds,
    ops: result.ops,
    opsPerSecond,
    p50Ms: p50,
    p99Ms: p99,
    errors: result.errors + (errors ?? 0),
    ratioOps: raw === undefined ? undefined : opsPerSecond / raw.opsPerSecond,
    ratioP50: raw?.p50Ms === undefined || p50 === undefined ? undefined : p50 / raw.p50Ms,
    detail:
      result.firstError === undefined ? detail : { ...detail, first_error: result.firstError },
  };
}

function tripsDelta(before: AdapterTrips, after: AdapterTrips) {
  const writes = after.writes - before.writes;
  const reads = after.reads - before.reads;
  return {
    perWrite: writes === 0 ? undefined : (after.roundTrips - before.roundTrips) / writes,
    perRead: reads === 0 ? undefined : (after.readRoundTrips - before.readRoundTrips) / reads,
  };
}

function shares(decisions: DecisionLog<unknown>): Record<string, number> {
  return decisions.shares();
}

function waitDetail(waits: readonly number[]): RowDetail {
  const { p50, p99 } = quantiles(waits);
  return { waits: waits.length, wait_p50_ms: p50, wait_p99_ms: p99 };
}

/** Probes of the router idle for a few seconds right after `ready()`. */
export async function idleProbeCell<C>(run: BenchRun<C>): Promise<void> {
  const seconds = Math.min(5, run.seconds);
  run.progress(`probes: router idle for ${seconds} s`);
  const before = run.probes.snapshot();
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const elapsed = (performance.now() - started) / 1000;
  run.emit({
    cell: 'probes-idle',
    variant: 'tidemark',
    concurrency: 0,
    seconds: elapsed,
    ops: 0,
    opsPerSecond: 0,
    p50Ms: undefined,
    p99Ms: undefined,
    errors: 0,
    ratioOps: undefined,
    ratioP50: undefined,
    detail: { probes_per_s: ProbeCounter.rates(before, run.probes.snapshot(), elapsed) },
  });
}

/** Point lookups by primary key with no wait: raw, Tidemark without a token, with a satisfied token. */
export async function readCells<C>(run: BenchRun<C>): Promise<void> {
  const { db, router } = run;
  const lookup = (connection: C) =>
    db.lookup(connection, 1 + Math.floor(Math.random() * SEEDED_ROWS));
  // A token every replica has applied: a write, then wait until both replicas have it.
  const tokens = new TokenCodec();
  const writer = new Session();
  await router.write(writer, (connection) => db.orders.placeOrder(connection, 0, 'token'), {
    transaction: false,
  });
  await run.watch.waitForReplicas();
  const token = tokens.encode(writer.toTokenData());

  for (const concurrency of READ_CONCURRENCY) {
    run.progress(`reads: concurrency ${concurrency}`);
    const raw = baseRow(
      'reads',
      'raw',
      concurrency,
      await measure(concurrency, run.seconds, async () => {
        await run.raw.read(0, lookup);
      }),
      undefined,
      { rt_per_read: 1 },
    );
    run.emit(raw);
    const variants: Array<[string, () => Session]> = [
      ['tidemark', () => new Session()],
      ['tidemark-token', () => Session.fromToken(tokens.decode(token))],
    ];
    for (const [variant, session] of variants) {
      let trips = run.adapter.roundTrips();
      let probes = run.probes.snapshot();
      const result = await measure(
        concurrency,
        run.seconds,
        async () => {
          await router.read(session(), lookup);
        },
        () => {
          run.decisions.reset();
          trips = run.adapter.roundTrips();
          probes = run.probes.snapshot();
        },
      );
      run.emit(
        baseRow('reads', variant, concurrency, result, raw, {
          rt_per_read: tripsDelta(trips, run.adapter.roundTrips()).perRead,
          share: shares(run.decisions),
          ...waitDetail(run.decisions.waits),
          probes_per_s: ProbeCounter.rates(probes, run.probes.snapshot(), result.seconds),
        }),
      );
    }
  }
}

/**
 * Autocommit inserts: the raw driver's one statement; Tidemark with `transaction: false` (the
 * same statement plus its capture) and with the default managed transaction.
 */
export async function writeCells<C>(run: BenchRun<C>): Promise<void> {
  const { db, router } = run;
  const insert = (connection: C) => db.orders.placeOrder(connection, 0, 'bench write');
  for (const concurrency of WRITE_CONCURRENCY) {
    run.progress(`writes: concurrency ${concurrency}`);
    const raw = baseRow(
      'writes',
      'raw',
      concurrency,
      await measure(concurrency, run.seconds, async () => {
        await run.raw.write(0, insert);
      }),
      undefined,
      { rt_per_write: 1 },
    );
    run.emit(raw);
    const sessions = Array.from({ length: concurrency }, () => new Session());
    const variants: Array<[string, boolean]> = [
      ['tidemark', false],
      ['tidemark-tx', true],
    ];
    for (const [variant, transaction] of variants) {
      let trips = run.adapter.roundTrips();
      const result = await measure(
        concurrency,
        run.seconds,
        async (w) => {
          await router.write(sessions[w]!, insert, { transaction });
        },
        () => {
          trips = run.adapter.roundTrips();
        },
      );
      run.emit(
        baseRow('writes', variant, concurrency, result, raw, {
          rt_per_write: tripsDelta(trips, run.adapter.roundTrips()).perWrite,
        }),
      );
    }
  }
}

let nextBase = 1;
/** A customer range no earlier load used. */
function freshBase(concurrency: number): number {
  const base = nextBase;
  nextBase += concurrency * 100 + 1000;
  return base;
}

async function bookstoreRun<C>(
  run: BenchRun<C>,
  strategy: BenchStrategy<C>,
  concurrency: number,
  options: { sampleLag: boolean; beforeMeasure?: () => void },
): Promise<{ load: BookstoreLoad<C>; result: LoopResult; lagMs: number[] }> {
  const warm = new BookstoreLoad(strategy, run.db.orders, concurrency, freshBase(concurrency), 1);
  await closedLoop(concurrency, warmupSeconds(run.seconds), (w) => warm.order(w));
  options.beforeMeasure?.();
  const load = new BookstoreLoad(strategy, run.db.orders, concurrency, freshBase(concurrency), 2);
  const lag = options.sampleLag ? run.watch.sampleUntilStopped() : undefined;
  const result = await closedLoop(concurrency, run.seconds, (w) => load.order(w));
  const lagMs = (await lag?.stop()) ?? [];
  return { load, result, lagMs };
}

function bookstoreDetail<C>(load: BookstoreLoad<C>, lagMs: readonly number[]): RowDetail {
  const read = quantiles(load.readMs);
  const lag = quantiles(lagMs);
  return {
    missing_own: load.missingOwn,
    own_checked: load.ownChecked,
    missing_any: load.missingAny,
    checked: load.checked,
    read_errors: load.readErrors,
    write_errors: load.writeErrors,
    read_p50_ms: read.p50,
    read_p99_ms: read.p99,
    ...(lagMs.length > 0 ? { lag_p50_ms: lag.p50, lag_p99_ms: lag.p99 } : {}),
    ...(load.firstError === undefined ? {} : { first_error: load.firstError }),
  };
}

function primaryShare(decisions: DecisionLog<unknown>): number | undefined {
  if (decisions.decisions === 0) return undefined;
  return (decisions.targets.get('primary') ?? 0) / decisions.decisions;
}

function bookstoreRow<C>(
  cell: 'bookstore' | 'bookstore-paused',
  variant: string,
  concurrency: number,
  measured: { load: BookstoreLoad<C>; result: LoopResult; lagMs: number[] },
  raw: Row | undefined,
  extra: RowDetail = {},
): Row {
  const { load, result, lagMs } = measured;
  return baseRow(
    cell,
    variant,
    concurrency,
    result,
    raw,
    { ...bookstoreDetail(load, lagMs), ...extra },
    load.readErrors + load.writeErrors,
  );
}

/** The Bookstore loop with replication running: raw driver, then Tidemark. */
export async function bookstoreCells<C>(run: BenchRun<C>): Promise<void> {
  for (const concurrency of BOOKSTORE_CONCURRENCY) {
    run.progress(`bookstore: concurrency ${concurrency}`);
    const raw = await bookstoreRun(run, run.raw, concurrency, { sampleLag: true });
    const rawRow = bookstoreRow('bookstore', 'raw', concurrency, raw, undefined);
    run.emit(rawRow);
    let probes = run.probes.snapshot();
    const tm = await bookstoreRun(run, new TidemarkStrategy(run.router), concurrency, {
      sampleLag: true,
      beforeMeasure: () => {
        run.decisions.reset();
        probes = run.probes.snapshot();
      },
    });
    run.emit(
      bookstoreRow('bookstore', 'tidemark', concurrency, tm, rawRow, {
        ...waitDetail(run.decisions.waits),
        primary_share: primaryShare(run.decisions),
        share: shares(run.decisions),
        probes_per_s: ProbeCounter.rates(probes, run.probes.snapshot(), tm.result.seconds),
      }),
    );
  }
}

/**
 * Replay paused on every replica (they keep receiving, they do not apply): the raw driver, then
 * a Tidemark router with default options started after the pause. Resumes and waits for the
 * replicas afterwards.
 */
export async function pausedBookstoreCells<C>(run: BenchRun<C>): Promise<void> {
  const replicas = run.cluster.replicas().map((node) => node.name);
  for (const name of replicas) await run.cluster.pauseReplay(name);
  try {
    for (const concurrency of BOOKSTORE_CONCURRENCY) {
      run.progress(`bookstore, replay paused on every replica: concurrency ${concurrency}`);
      const raw = await bookstoreRun(run, run.raw, concurrency, { sampleLag: false });
      const rawRow = bookstoreRow('bookstore-paused', 'raw', concurrency, raw, undefined);
      run.emit(rawRow);
      const fresh = await run.newRouter();
      try {
        let rejectedBefore = 0;
        const tm = await bookstoreRun(run, new TidemarkStrategy(fresh.router), concurrency, {
          sampleLag: false,
          beforeMeasure: () => {
            fresh.decisions.reset();
            rejectedBefore = fresh.router.metrics().capRejections;
          },
        });
        run.emit(
          bookstoreRow('bookstore-paused', 'tidemark', concurrency, tm, rawRow, {
            ...waitDetail(fresh.decisions.waits),
            primary_share: primaryShare(fresh.decisions),
            cap_rejections: fresh.router.metrics().capRejections - rejectedBefore,
          }),
        );
      } finally {
        await fresh.router.close();
      }
    }
  } finally {
    for (const name of replicas) await run.cluster.resumeReplay(name);
    await run.watch.waitForReplicas();
  }
}
