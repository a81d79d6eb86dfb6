import { Session, TokenCodec } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { BookstoreLoad } from './bookstore.js';
import { type BenchDatabase, SEEDED_ROWS } from './databases.js';
import type { ReplicationWatch } from './lag.js';
import { closedLoop, type LoopResult, quantiles, warmupSeconds } from './loop.js';
import type { Row, RowDetail } from './report.js';
import {
  type BenchStrategy,
  type InstrumentedRouter,
  type RawDriver,
  Tally,
  TidemarkStrategy,
} from './strategies.js';

/** Everything the cells share: one cluster, the raw driver and one Tidemark router on it. */
export interface BenchRun<C> {
  readonly db: BenchDatabase<C>;
  readonly cluster: Cluster;
  /** Measured seconds per variant and cell (a warm-up runs before). */
  readonly seconds: number;
  readonly raw: RawDriver<C>;
  /** The router with default options that every cell but the paused one uses. */
  readonly tidemark: InstrumentedRouter<C>;
  readonly watch: ReplicationWatch<C>;
  /**
   * A router on a fresh adapter: default options (the paused cells start one), or the given
   * wait options (the Bookstore's `fast` variant).
   */
  newRouter(options?: BenchRouterOptions): Promise<InstrumentedRouter<C>>;
  progress(line: string): void;
  emit(row: Row): void;
}

/** Router options a benchmark variant may set (everything else stays default). */
export interface BenchRouterOptions {
  readonly wait?: { readonly budgetMs: number };
  readonly settle?: 'deferred' | 'immediate';
}

export const READ_CONCURRENCY = [1, 16, 64] as const;
export const WRITE_CONCURRENCY = [1, 16] as const;
export const BOOKSTORE_CONCURRENCY = [1, 16] as const;

/** One way of doing a cell's work; Tidemark variants carry their router and a tally. */
interface Variant<C> {
  readonly name: string;
  op(worker: number): Promise<void>;
  /** Warm-up work when it must not touch the measured state (the Bookstore's ledgers). */
  warm?(worker: number): Promise<void>;
  readonly tidemark?: { readonly router: InstrumentedRouter<C>; readonly tally: Tally };
}

interface Measured {
  result: LoopResult;
  lagMs: number[];
}

/**
 * Rounds of about 2 s: the cell's time is cut into rounds, and each round runs every variant
 * once, in an order that rotates from round to round. On a shared machine a slow spell then
 * hits every variant about equally, so the ratios between them stay meaningful.
 */
function roundsFor(seconds: number): number {
  return Math.max(1, Math.min(5, Math.floor(seconds / 2)));
}

/**
 * Warm each variant up, then run the rounds. Returns the merged loop result per variant, and
 * the replay lag sampled during its rounds when `sampleLag` is set.
 */
async function interleave<C>(
  run: BenchRun<C>,
  concurrency: number,
  variants: readonly Variant<C>[],
  sampleLag: boolean,
): Promise<Map<string, Measured>> {
  for (const variant of variants) {
    const warm = variant.warm ?? variant.op;
    await closedLoop(concurrency, warmupSeconds(run.seconds), (w) => warm.call(variant, w));
  }
  const rounds = roundsFor(run.seconds);
  const slice = run.seconds / rounds;
  const measured = new Map<string, Measured>(
    variants.map((v) => [
      v.name,
      {
        result: {
          ops: 0,
          errors: 0,
          seconds: 0,
          latencies: [],
          firstError: undefined,
          cpuMicros: 0,
        },
        lagMs: [],
      },
    ]),
  );
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < variants.length; k++) {
      const variant = variants[(round + k) % variants.length]!;
      const lag = sampleLag ? run.watch.sampleUntilStopped() : undefined;
      const loop = () => closedLoop(concurrency, slice, (w) => variant.op(w));
      const result = variant.tidemark
        ? await variant.tidemark.router.during(variant.tidemark.tally, loop)
        : await loop();
      const lagMs = (await lag?.stop()) ?? [];
      const into = measured.get(variant.name)!;
      into.result = {
        ops: into.result.ops + result.ops,
        errors: into.result.errors + result.errors,
        seconds: into.result.seconds + result.seconds,
        latencies: [...into.result.latencies, ...result.latencies],
        firstError: into.result.firstError ?? result.firstError,
        cpuMicros: into.result.cpuMicros + result.cpuMicros,
      };
      into.lagMs.push(...lagMs);
    }
  }
  return measured;
}

function baseRow(
  cell: Row['cell'],
  variant: string,
  concurrency: number,
  result: LoopResult,
  raw: Row | undefined,
  detail: RowDetail,
  errors = 0,
): Row {
  const opsPerSecond = result.ops / result.seconds;
  const { p50, p99 } = quantiles(result.latencies);
  const cpuPerOp = result.ops > 0 ? result.cpuMicros / result.ops : undefined;
  const rawCpuPerOp = raw?.detail['cpu_us_per_op'];
  const cpu: RowDetail = {
    cpu_us_per_op: cpuPerOp,
    ...(typeof rawCpuPerOp === 'number' && cpuPerOp !== undefined
      ? { x_cpu: cpuPerOp / rawCpuPerOp }
      : {}),
  };
  return {
    cell,
    variant,
    concurrency,
    seconds: result.seconds,
    ops: result.ops,
    opsPerSecond,
    p50Ms: p50,
    p99Ms: p99,
    errors: result.errors + errors,
    ratioOps: raw === undefined ? undefined : opsPerSecond / raw.opsPerSecond,
    ratioP50: raw?.p50Ms === undefined || p50 === undefined ? undefined : p50 / raw.p50Ms,
    detail:
      result.firstError === undefined
        ? { ...detail, ...cpu }
        : { ...detail, ...cpu, first_error: result.firstError },
  };
}

function waitDetail(tally: Tally): RowDetail {
  const { p50, p99 } = quantiles(tally.waits);
  return { waits: tally.waits.length, wait_p50_ms: p50, wait_p99_ms: p99 };
}

function tidemarkVariant<C>(
  name: string,
  router: InstrumentedRouter<C>,
  op: (worker: number) => Promise<void>,
  warm?: (worker: number) => Promise<void>,
): Variant<C> & { tidemark: { router: InstrumentedRouter<C>; tally: Tally } } {
  return { name, op, ...(warm ? { warm } : {}), tidemark: { router, tally: new Tally() } };
}

/** Probes of the main router while nothing runs, right after `ready()`. */
export async function idleProbeCell<C>(run: BenchRun<C>): Promise<void> {
  const seconds = Math.min(5, run.seconds);
  run.progress(`probes: router idle for ${seconds} s`);
  const tally = new Tally();
  await run.tidemark.during(
    tally,
    () => new Promise((resolve) => setTimeout(resolve, seconds * 1000)),
  );
  run.emit({
    cell: 'probes-idle',
    variant: 'tidemark',
    concurrency: 0,
    seconds: tally.seconds,
    ops: 0,
    opsPerSecond: 0,
    p50Ms: undefined,
    p99Ms: undefined,
    errors: 0,
    ratioOps: undefined,
    ratioP50: undefined,
    detail: { probes_per_s: tally.probeRates() },
  });
}

/**
 * Round trips per write on the write's connection, as the PostgreSQL server logged them
 * (`server-check.ts`), next to the adapter's own count: once, sequentially, 50 writes each.
 */
export async function serverCheckCell<C>(run: BenchRun<C>): Promise<void> {
  if (run.cluster.flavour !== 'postgres' || run.cluster.target === 'pg19') {
    run.progress('server check: PostgreSQL on the host only (pg15, pg18); skipped');
    return;
  }
  run.progress('server check: statements the primary logged per write');
  const { pgServerCheck } = await import('./server-check.js');
  const check = await pgServerCheck(
    run.cluster,
    run.db as unknown as BenchDatabase<import('pg').PoolClient>,
  );
  if (!check) {
    run.progress('server check: the primary log was not found; skipped');
    return;
  }
  const row = (variant: string, logged: number, counted: number): Row => ({
    cell: 'writes-server',
    variant,
    concurrency: 1,
    seconds: 0,
    ops: check.writes,
    opsPerSecond: 0,
    p50Ms: undefined,
    p99Ms: undefined,
    errors: 0,
    ratioOps: undefined,
    ratioP50: undefined,
    detail: { server_per_write: logged, rt_per_write: counted },
  });
  run.emit(row('raw', check.rawPerWrite, 1));
  run.emit(row('tidemark', check.autocommitPerWrite, check.autocommitCounted));
  run.emit(row('tidemark-tx', check.managedPerWrite, check.managedCounted));
}

/** Point lookups by primary key with no wait: raw, Tidemark without a token, with a satisfied token. */
export async function readCells<C>(run: BenchRun<C>): Promise<void> {
  const { db } = run;
  const router = run.tidemark.router;
  const lookup = (connection: C) =>
    db.lookup(connection, 1 + Math.floor(Math.random() * SEEDED_ROWS));
  // A token every replica has applied: a write, then wait until both replicas have it.
  const tokens = new TokenCodec();
  const writer = new Session();
  await router.write(writer, (connection) => db.orders.placeOrder(connection, 0, 'token'), {
    transaction: false,
  });
  await writer.settled();
  await run.watch.waitForReplicas();
  const token = tokens.encode(writer.toTokenData());

  for (const concurrency of READ_CONCURRENCY) {
    run.progress(`reads: concurrency ${concurrency}`);
    const noToken = tidemarkVariant('tidemark', run.tidemark, async () => {
      await router.read(new Session(), lookup);
    });
    const withToken = tidemarkVariant('tidemark-token', run.tidemark, async () => {
      await router.read(Session.fromToken(tokens.decode(token)), lookup);
    });
    const raw: Variant<C> = {
      name: 'raw',
      op: async () => {
        await run.raw.read(0, lookup);
      },
    };
    const measured = await interleave(run, concurrency, [raw, noToken, withToken], false);
    const rawRow = baseRow('reads', 'raw', concurrency, measured.get('raw')!.result, undefined, {
      rt_per_read: 1,
    });
    run.emit(rawRow);
    for (const variant of [noToken, withToken]) {
      const { tally } = variant.tidemark;
      run.emit(
        baseRow('reads', variant.name, concurrency, measured.get(variant.name)!.result, rawRow, {
          rt_per_read: tally.roundTripsPerRead(),
          share: tally.shares(),
          ...waitDetail(tally),
          probes_per_s: tally.probeRates(),
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
  const { db } = run;
  const router = run.tidemark.router;
  const insert = (connection: C) => db.orders.placeOrder(connection, 0, 'bench write');
  for (const concurrency of WRITE_CONCURRENCY) {
    run.progress(`writes: concurrency ${concurrency}`);
    const sessions = Array.from({ length: concurrency }, () => new Session());
    const raw: Variant<C> = {
      name: 'raw',
      op: async () => {
        await run.raw.write(0, insert);
      },
    };
    const autocommit = tidemarkVariant('tidemark', run.tidemark, async (w) => {
      await router.write(sessions[w]!, insert, { transaction: false });
    });
    const managed = tidemarkVariant('tidemark-tx', run.tidemark, async (w) => {
      await router.write(sessions[w]!, insert);
    });
    const measured = await interleave(run, concurrency, [raw, autocommit, managed], false);
    const rawRow = baseRow('writes', 'raw', concurrency, measured.get('raw')!.result, undefined, {
      rt_per_write: 1,
    });
    run.emit(rawRow);
    for (const variant of [autocommit, managed]) {
      run.emit(
        baseRow('writes', variant.name, concurrency, measured.get(variant.name)!.result, rawRow, {
          rt_per_write: variant.tidemark.tally.roundTripsPerWrite(),
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

/** A Bookstore variant: its own measured load, and a separate load for the warm-up. */
function bookstoreLoads<C>(run: BenchRun<C>, strategy: BenchStrategy<C>, concurrency: number) {
  const warm = new BookstoreLoad(strategy, run.db.orders, concurrency, freshBase(concurrency), 1);
  const load = new BookstoreLoad(strategy, run.db.orders, concurrency, freshBase(concurrency), 2);
  return { load, op: (w: number) => load.order(w), warm: (w: number) => warm.order(w) };
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

/**
 * The Bookstore loop, raw driver against Tidemark (`router`), interleaved in rounds; emits both
 * rows. With `paused` the lag is not sampled (it would only time out).
 */
async function bookstorePair<C>(
  run: BenchRun<C>,
  cell: 'bookstore' | 'bookstore-paused',
  concurrency: number,
  router: InstrumentedRouter<C>,
  extra: { fast?: InstrumentedRouter<C>; immediate?: InstrumentedRouter<C> } = {},
): Promise<void> {
  const raw = bookstoreLoads(run, run.raw, concurrency);
  const rawVariant: Variant<C> = { name: 'raw', op: raw.op, warm: raw.warm };
  // `tidemark`: each request settles its reads before its cookie goes out (the HTTP carriers'
  // default); `tidemark-carry`: the cookie carries them (toTokenData({ carryPending: true }));
  // `tidemark-fast`: carrying, on a router that never waits (`wait: { budgetMs: 0 }`): a read
  // no replica is known to cover goes to the primary at once; `tidemark-immediate`: settling, on
  // a router with `settle: 'immediate'` (where the adapter can, the position comes with the read).
  const { fast, immediate } = extra;
  const variants: Array<{ name: string; router: InstrumentedRouter<C>; carry: boolean }> = [
    { name: 'tidemark', router, carry: false },
    { name: 'tidemark-carry', router, carry: true },
    ...(fast ? [{ name: 'tidemark-fast', router: fast, carry: true }] : []),
    ...(immediate ? [{ name: 'tidemark-immediate', router: immediate, carry: false }] : []),
  ];
  const tidemarks = variants.map(({ name, router: chosen, carry }) => {
    const loads = bookstoreLoads(
      run,
      new TidemarkStrategy(chosen.router, { carryPending: carry }),
      concurrency,
    );
    return { name, loads, variant: tidemarkVariant(name, chosen, loads.op, loads.warm) };
  });
  const sampleLag = cell === 'bookstore';
  const measured = await interleave(
    run,
    concurrency,
    [rawVariant, ...tidemarks.map((t) => t.variant)],
    sampleLag,
  );
  const rawMeasured = measured.get('raw')!;
  const rawRow = baseRow(
    cell,
    'raw',
    concurrency,
    rawMeasured.result,
    undefined,
    bookstoreDetail(raw.load, rawMeasured.lagMs),
    raw.load.readErrors + raw.load.writeErrors,
  );
  run.emit(rawRow);
  for (const { name, loads, variant } of tidemarks) {
    const tmMeasured = measured.get(name)!;
    const { tally } = variant.tidemark;
    run.emit(
      baseRow(
        cell,
        name,
        concurrency,
        tmMeasured.result,
        rawRow,
        {
          ...bookstoreDetail(loads.load, tmMeasured.lagMs),
          ...waitDetail(tally),
          primary_share: tally.primaryShare(),
          share: tally.shares(),
          cap_rejections: tally.capRejections,
          probes_per_s: tally.probeRates(),
        },
        loads.load.readErrors + loads.load.writeErrors,
      ),
    );
  }
}

/** The Bookstore loop with replication running: raw driver and Tidemark. */
export async function bookstoreCells<C>(run: BenchRun<C>): Promise<void> {
  const fast = await run.newRouter({ wait: { budgetMs: 0 } });
  const immediate = await run.newRouter({ settle: 'immediate' });
  try {
    for (const concurrency of BOOKSTORE_CONCURRENCY) {
      run.progress(`bookstore: concurrency ${concurrency}`);
      await bookstorePair(run, 'bookstore', concurrency, run.tidemark, { fast, immediate });
    }
  } finally {
    await fast.router.close();
    await immediate.router.close();
  }
}

/**
 * Replay paused on every replica (they keep receiving, they do not apply): the raw driver and
 * a Tidemark router with default options started after the pause. Resumes and waits for the
 * replicas afterwards.
 */
export async function pausedBookstoreCells<C>(run: BenchRun<C>): Promise<void> {
  const replicas = run.cluster.replicas().map((node) => node.name);
  for (const name of replicas) await run.cluster.pauseReplay(name);
  try {
    for (const concurrency of BOOKSTORE_CONCURRENCY) {
      run.progress(`bookstore, replay paused on every replica: concurrency ${concurrency}`);
      const fresh = await run.newRouter();
      try {
        await bookstorePair(run, 'bookstore-paused', concurrency, fresh);
      } finally {
        await fresh.router.close();
      }
    }
  } finally {
    for (const name of replicas) await run.cluster.resumeReplay(name);
    await run.watch.waitForReplicas();
  }
}
