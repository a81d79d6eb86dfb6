/**
 * `pnpm bench:budget [--orders N] [--delays 0,5,50,500] [--budgets 0,50,250,auto] [--rate N]
 * (a budget `auto:C`: auto with the ceiling C ms, `wait.maxBudgetMs`)
 * [--runs K] [--db T] [--json]`:
 * wait budgets, constant or learned, on the Bookstore with replay delayed on purpose. For each
 * injected delay on the replica (PostgreSQL `recovery_min_apply_delay`; MySQL `SOURCE_DELAY`,
 * whole seconds only) the Bookstore runs through the tidemark strategy once per budget (0, 50,
 * 250 ms and `auto`), and the table shows what each cost: primary share, waits, read p50/p99 and
 * missed own orders (must be 0 for every budget). `auto` is never told the delay.
 *
 * Two workloads. Without `--rate`: the closed loop of the demo (`runWorkload`), one call at a
 * time, so a read that waits also delays every later order. With `--rate N`: N orders per second
 * on a clock (bench/open-loop.ts), so every budget is offered the same load and latency counts
 * from each read's arrival. `--db`: pg18 (embedded PostgreSQL 18, the default), pg15 or mysql97
 * (the harness's local servers). `--runs K` repeats the whole grid with seeds 1..K. A benchmark,
 * never a test.
 */
import { parseArgs } from 'node:util';
import { startCluster } from '@tidemark/test-clusters';
import pg from 'pg';
import { mysqlDatabase } from '../src/databases/mysql/index.js';
import { withMysqlConnection } from '../src/databases/mysql/pool.js';
import { connectExternalCluster, startEmbeddedCluster } from '../src/databases/pg/cluster.js';
import { pgDatabase } from '../src/databases/pg/index.js';
import type { Database, DemoCluster } from '../src/databases/types.js';
import { runWorkload } from '../src/workload.js';
import { runOpenLoop } from './open-loop.js';

const TARGETS = ['pg18', 'pg15', 'mysql97'] as const;
type Target = (typeof TARGETS)[number];

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    orders: { type: 'string', default: '150' },
    delays: { type: 'string' },
    rate: { type: 'string' },
    runs: { type: 'string', default: '1' },
    db: { type: 'string', default: 'pg18' },
    budgets: { type: 'string', default: '0,50,250,auto' },
    json: { type: 'boolean', default: false },
  },
});
const orders = Number(values.orders);
const target = values.db as Target;
if (!(TARGETS as readonly string[]).includes(target)) {
  throw new Error(`--db must be one of ${TARGETS.join(', ')}, got ${values.db}`);
}
const delays = (values.delays ?? (target === 'mysql97' ? '0,1000' : '0,5,50,500'))
  .split(',')
  .map(Number);
const rate = values.rate === undefined ? undefined : Number(values.rate);
if (rate !== undefined && !(Number.isFinite(rate) && rate > 0)) {
  throw new Error(`--rate must be a number of orders per second > 0, got ${values.rate}`);
}
const runs = Number(values.runs);
if (!(Number.isInteger(runs) && runs >= 1))
  throw new Error(`--runs must be >= 1, got ${values.runs}`);
if (target === 'mysql97' && delays.some((d) => d % 1000 !== 0)) {
  throw new Error(
    'MySQL delays replay in whole seconds (SOURCE_DELAY): give --delays in multiples of 1000',
  );
}
/** One budget of the grid: a constant, `auto`, or `auto:C` (`auto` with the ceiling C ms). */
interface BudgetSpec {
  /** As given on the command line; the `budget` field of each row. */
  readonly label: string;
  readonly budgetMs: number | 'auto';
  readonly maxBudgetMs?: number;
}
const BUDGETS: readonly BudgetSpec[] = (values.budgets as string).split(',').map((text) => {
  const ceiling = /^auto:(\d+(?:\.\d+)?)$/.exec(text);
  if (text === 'auto') return { label: text, budgetMs: 'auto' };
  if (ceiling) return { label: text, budgetMs: 'auto', maxBudgetMs: Number(ceiling[1]) };
  const ms = Number(text);
  if (!(Number.isFinite(ms) && ms >= 0)) throw new Error(`--budgets: ${text} is not a budget`);
  return { label: String(ms), budgetMs: ms };
});
/** How a row's budget is printed: `50 ms`, `auto`, `auto:100`. */
const budgetText = (label: string) => (/^auto/.test(label) ? label : `${label} ms`);
const log = (line: string) => process.stderr.write(`${line}\n`);

/** A primary and one replica whose replay can be delayed, and the demo's database code for it. */
interface BudgetCluster<C> {
  readonly database: Database<C>;
  readonly cluster: DemoCluster;
  setDelay(ms: number): Promise<void>;
  close(): Promise<void>;
}

async function withBudgetCluster<R>(use: <C>(cluster: BudgetCluster<C>) => Promise<R>): Promise<R> {
  switch (target) {
    case 'pg18': {
      const cluster = await startEmbeddedCluster();
      return use({
        database: pgDatabase,
        cluster,
        setDelay: (ms) => setPgDelay(cluster.replicaUrl, ms),
        close: () => cluster.close(),
      });
    }
    case 'pg15': {
      const harness = await startCluster('pg15', { replicas: 1, provider: 'local' });
      try {
        const replica = harness.replicas()[0];
        if (!replica) throw new Error('the harness started a cluster without a replica');
        const cluster = await connectExternalCluster(harness.primary().url, replica.url);
        return await use({
          database: pgDatabase,
          cluster,
          setDelay: (ms) => setPgDelay(cluster.replicaUrl, ms),
          close: () => cluster.close(),
        });
      } finally {
        await harness.teardown();
      }
    }
    case 'mysql97': {
      const cluster = await mysqlDatabase.startLocalCluster();
      return use({
        database: mysqlDatabase,
        cluster,
        setDelay: (ms) => setMysqlDelay(cluster.replicaUrl, ms),
        close: () => cluster.close(),
      });
    }
  }
}

async function setMysqlDelay(replicaUrl: string, ms: number): Promise<void> {
  await withMysqlConnection(replicaUrl, async (connection) => {
    await connection.query('STOP REPLICA SQL_THREAD');
    await connection.query(`CHANGE REPLICATION SOURCE TO SOURCE_DELAY = ${Math.round(ms / 1000)}`);
    await connection.query('START REPLICA SQL_THREAD');
  });
}

async function setPgDelay(replicaUrl: string, ms: number): Promise<void> {
  const client = new pg.Client({ connectionString: replicaUrl });
  await client.connect();
  try {
    await client.query(`ALTER SYSTEM SET recovery_min_apply_delay = '${ms}ms'`);
    await client.query('SELECT pg_reload_conf()');
    // The setting is read by the startup process; give it a moment to apply.
    await new Promise((resolve) => setTimeout(resolve, 300));
  } finally {
    await client.end();
  }
}

interface Row {
  db: Target;
  /** `closed`: the demo's sequential loop; `open`: a fixed rate of orders (`--rate`). */
  mode: 'closed' | 'open';
  /** Orders per second offered (open loop only). */
  rate: number | null;
  run: number;
  delay_ms: number;
  budget: string;
  reads: number;
  primary_share: number;
  waits: number;
  wait_ms_p50: number | null;
  read_ms_p50: number | null;
  read_ms_p99: number | null;
  /** Open loop: the writers' reads of their new order, from the write's acknowledgement. */
  own_read_ms_p99?: number | null;
  missing_in_list: number;
  errors: number;
  duration_s: number;
  /** Open loop: most an arrival started late (busy event loop), ms. */
  late_ms_max?: number;
}

async function main(): Promise<void> {
  log(`starting ${target} (primary + 1 replica)...`);
  const rows: Row[] = [];
  await withBudgetCluster(async (budgetCluster) => {
    const { cluster } = budgetCluster;
    log(cluster.description);
    try {
      for (let run = 1; run <= runs; run++) {
        for (const delay of delays) {
          await budgetCluster.setDelay(delay);
          for (const budget of BUDGETS) {
            const row = await measure(budgetCluster, run, delay, budget);
            rows.push(row);
            if (values.json) process.stdout.write(`${JSON.stringify(row)}\n`);
          }
        }
      }
    } finally {
      await budgetCluster.setDelay(0).catch(() => undefined);
      await budgetCluster.close();
    }
  });
  if (!values.json) printTable(rows);
}

async function measure<C>(
  { cluster, database }: BudgetCluster<C>,
  run: number,
  delay: number,
  budget: BudgetSpec,
): Promise<Row> {
  await cluster.resetOrders();
  const strategy = await database.createTidemarkStrategy(
    {
      primaryUrl: cluster.primaryUrl,
      replicaUrl: cluster.replicaUrl,
      plannedReads: orders * 5,
    },
    {
      waitBudgetMs: budget.budgetMs,
      ...(budget.maxBudgetMs === undefined ? {} : { waitMaxBudgetMs: budget.maxBudgetMs }),
      fallbackRatePerSecond: 100,
      fallbackBurst: undefined,
    },
  );
  log(`run ${run}, delay ${delay} ms, budget ${budget.label}...`);
  const common = { db: target, run, delay_ms: delay, budget: budget.label };
  try {
    if (rate === undefined) {
      const r = await runWorkload(strategy, database.orders, {
        db: database.name,
        scenario: 'idle',
        orders,
        customers: 100,
        otherReaders: 4,
        seed: run,
        log,
      });
      return {
        ...common,
        mode: 'closed',
        rate: null,
        reads: r.reads,
        primary_share: share(r.primary_reads, r.reads),
        waits: r.waits,
        wait_ms_p50: r.wait_ms_p50,
        read_ms_p50: r.read_ms_p50,
        read_ms_p99: r.read_ms_p99,
        missing_in_list: r.missing_in_list,
        errors: r.errors,
        duration_s: r.duration_s,
      };
    }
    const r = await runOpenLoop(strategy, database.orders, {
      orders,
      ratePerSecond: rate,
      customers: 100,
      otherReaders: 4,
      seed: run,
      log,
    });
    return {
      ...common,
      mode: 'open',
      rate,
      reads: r.reads,
      primary_share: share(r.primary_reads, r.reads),
      waits: r.waits,
      wait_ms_p50: r.wait_ms_p50,
      read_ms_p50: r.read_ms_p50,
      read_ms_p99: r.read_ms_p99,
      own_read_ms_p99: r.own_read_ms_p99,
      missing_in_list: r.missing_in_list,
      errors: r.errors,
      duration_s: r.duration_s,
      late_ms_max: r.late_ms_max,
    };
  } finally {
    await strategy.close();
  }
}

function share(part: number, of: number): number {
  return of === 0 ? 0 : Math.round((1000 * part) / of) / 1000;
}

const ms = (value: number | null | undefined) =>
  value === null || value === undefined ? '-' : `${value} ms`;

function printTable(rows: readonly Row[]): void {
  const open = rows.some((r) => r.mode === 'open');
  const header = [
    ...(runs > 1 ? ['run'] : []),
    'delay',
    'budget',
    'primary',
    'waits',
    'wait p50',
    'read p50',
    'read p99',
    ...(open ? ['own p99'] : []),
    'missing',
    'errors',
  ];
  const cells = rows.map((r) => [
    ...(runs > 1 ? [String(r.run)] : []),
    `${r.delay_ms} ms`,
    budgetText(r.budget),
    `${(r.primary_share * 100).toFixed(1)}%`,
    String(r.waits),
    ms(r.wait_ms_p50),
    ms(r.read_ms_p50),
    ms(r.read_ms_p99),
    ...(open ? [ms(r.own_read_ms_p99)] : []),
    String(r.missing_in_list),
    String(r.errors),
  ]);
  process.stdout.write(`${align(header, cells)}\n`);
  if (runs > 1) process.stdout.write(`\nacross the ${runs} runs (min-max):\n${spread(rows)}\n`);
}

/** Per delay and budget, the range of each number over the runs. */
function spread(rows: readonly Row[]): string {
  const header = [
    'delay',
    'budget',
    'primary',
    'waits',
    'read p50',
    'read p99',
    'missing',
    'errors',
  ];
  const cells: string[][] = [];
  for (const delay of delays) {
    for (const budget of BUDGETS) {
      const cell = rows.filter((r) => r.delay_ms === delay && r.budget === budget.label);
      const range = (pick: (r: Row) => number | null, unit = '') => {
        const values = cell.map(pick).filter((v): v is number => v !== null);
        if (values.length === 0) return '-';
        const lo = Math.min(...values);
        const hi = Math.max(...values);
        const f = (v: number) => `${Math.round(v * 10) / 10}`;
        return lo === hi ? `${f(lo)}${unit}` : `${f(lo)}-${f(hi)}${unit}`;
      };
      cells.push([
        `${delay} ms`,
        budgetText(budget.label),
        range((r) => r.primary_share * 100, '%'),
        range((r) => r.waits),
        range((r) => r.read_ms_p50, ' ms'),
        range((r) => r.read_ms_p99, ' ms'),
        range((r) => r.missing_in_list),
        range((r) => r.errors),
      ]);
    }
  }
  return align(header, cells);
}

function align(header: string[], cells: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => v.padStart(widths[i]!)).join('  ');
  return `${line(header)}\n${cells.map(line).join('\n')}`;
}

await main();
process.exit(0);
