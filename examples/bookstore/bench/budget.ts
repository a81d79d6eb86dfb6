/**
 * `pnpm bench:budget [--orders N] [--json]`: wait budgets, constant or learned, on the Bookstore
 * with replay delayed on purpose. On embedded PostgreSQL 18 (primary + 1 replica), for each
 * injected delay (`recovery_min_apply_delay` = 0, 5, 50, 500 ms on the replica) the idle
 * Bookstore runs through the tidemark strategy once per budget (0, 50, 250 ms and `auto`), and
 * the table shows what each cost: primary share, waits, read p50/p99 and missed own orders (must
 * be 0 for every budget). `auto` is never told the delay. A benchmark, never a test.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startEmbeddedCluster } from '../src/databases/pg/cluster.js';
import { pgDatabase } from '../src/databases/pg/index.js';
import { runWorkload } from '../src/workload.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    orders: { type: 'string', default: '150' },
    delays: { type: 'string', default: '0,5,50,500' },
    json: { type: 'boolean', default: false },
  },
});
const orders = Number(values.orders);
const delays = (values.delays as string).split(',').map(Number);
const BUDGETS: ReadonlyArray<number | 'auto'> = [0, 50, 250, 'auto'];
const log = (line: string) => process.stderr.write(`${line}\n`);

async function setDelay(replicaUrl: string, ms: number): Promise<void> {
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
  delay_ms: number;
  budget: string;
  reads: number;
  primary_share: number;
  waits: number;
  wait_ms_p50: number | null;
  read_ms_p50: number | null;
  read_ms_p99: number | null;
  missing_in_list: number;
  errors: number;
  duration_s: number;
}

async function main(): Promise<void> {
  log('starting embedded PostgreSQL 18 (primary + 1 replica)...');
  const cluster = await startEmbeddedCluster();
  const rows: Row[] = [];
  try {
    for (const delay of delays) {
      await setDelay(cluster.replicaUrl, delay);
      for (const budget of BUDGETS) {
        await cluster.resetOrders();
        const strategy = await pgDatabase.createTidemarkStrategy(
          {
            primaryUrl: cluster.primaryUrl,
            replicaUrl: cluster.replicaUrl,
            plannedReads: orders * 5,
          },
          { waitBudgetMs: budget, fallbackRatePerSecond: 100, fallbackBurst: undefined },
        );
        log(`delay ${delay} ms, budget ${budget}...`);
        try {
          const r = await runWorkload(strategy, pgDatabase.orders, {
            db: 'pg',
            scenario: 'idle',
            orders,
            customers: 100,
            otherReaders: 4,
            seed: 1,
            log,
          });
          const row: Row = {
            delay_ms: delay,
            budget: String(budget),
            reads: r.reads,
            primary_share: Math.round((1000 * r.primary_reads) / r.reads) / 1000,
            waits: r.waits,
            wait_ms_p50: r.wait_ms_p50,
            read_ms_p50: r.read_ms_p50,
            read_ms_p99: r.read_ms_p99,
            missing_in_list: r.missing_in_list,
            errors: r.errors,
            duration_s: r.duration_s,
          };
          rows.push(row);
          if (values.json) process.stdout.write(`${JSON.stringify(row)}\n`);
        } finally {
          await strategy.close();
        }
      }
    }
  } finally {
    await setDelay(cluster.replicaUrl, 0).catch(() => undefined);
    await cluster.close();
  }
  if (!values.json) printTable(rows);
}

function printTable(rows: readonly Row[]): void {
  const header = [
    'delay',
    'budget',
    'primary',
    'waits',
    'wait p50',
    'read p50',
    'read p99',
    'missing',
    'errors',
  ];
  const cells = rows.map((r) => [
    `${r.delay_ms} ms`,
    r.budget === 'auto' ? 'auto' : `${r.budget} ms`,
    `${(r.primary_share * 100).toFixed(1)}%`,
    String(r.waits),
    r.wait_ms_p50 === null ? '-' : `${r.wait_ms_p50} ms`,
    r.read_ms_p50 === null ? '-' : `${r.read_ms_p50} ms`,
    r.read_ms_p99 === null ? '-' : `${r.read_ms_p99} ms`,
    String(r.missing_in_list),
    String(r.errors),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => v.padStart(widths[i]!)).join('  ');
  process.stdout.write(`${line(header)}\n${cells.map(line).join('\n')}\n`);
}

await main();
process.exit(0);
