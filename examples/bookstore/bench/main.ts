/**
 * End-to-end benchmark: `pnpm bench:e2e [--db pg18|pg15|pg19|mysql97|mariadb1011] [--seconds N]
 * [--cells ...] [--json]`. One process, one cluster (primary + 2 replicas from the test
 * harness), the raw driver and Tidemark (default options) side by side. Never a test: it reports,
 * the reader judges; compare the ratios, which come from one run on one machine.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Router } from '@tidemark/core';
import { type Cluster, startCluster } from '@tidemark/test-clusters';
import {
  type BenchRouterOptions,
  type BenchRun,
  bookstoreCells,
  idleProbeCell,
  pausedBookstoreCells,
  readCells,
  serverCheckCell,
  writeCells,
} from './cells.js';
import {
  BENCH_TARGETS,
  type BenchAdapterOptions,
  type BenchDatabase,
  type BenchTarget,
  resetAndSeed,
  withBenchDatabase,
} from './databases.js';
import { ReplicationWatch } from './lag.js';
import { infoJson, infoText, type Row, type RunInfo, rowJson, table } from './report.js';
import { InstrumentedRouter, RawDriver } from './strategies.js';

const CELLS = ['probes', 'reads', 'writes', 'server', 'bookstore', 'paused'] as const;
type CellName = (typeof CELLS)[number];

const USAGE = `Usage: pnpm bench:e2e [options]

Runs the raw driver alone and Tidemark (default options) on the same local cluster (primary +
2 replicas, started by the test harness and stopped at the end), in one process.

  --db T          ${BENCH_TARGETS.join(' | ')} (default pg18: embedded PostgreSQL)
  --seconds N     measured seconds per cell (default 10); a warm-up of min(1, N/5) s runs first
  --cells A,B     any of ${CELLS.join(',')} (default all; server: PostgreSQL on the
                  host only, pg15 and pg18)
  --json          one JSON object per line on stdout (a run line, then one line per row)
  --pg-pipeline-capture
                  PostgreSQL targets: create the adapters with pipelineCapture: true
  -h, --help
`;

interface Options {
  target: BenchTarget;
  seconds: number;
  cells: CellName[];
  json: boolean;
  adapterOptions: BenchAdapterOptions;
}

function parseOptions(argv: string[]): Options | undefined {
  const { values } = parseArgs({
    args: argv[0] === '--' ? argv.slice(1) : argv,
    options: {
      db: { type: 'string' },
      seconds: { type: 'string' },
      cells: { type: 'string' },
      json: { type: 'boolean' },
      'pg-pipeline-capture': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return undefined;
  const target = (values.db ?? 'pg18') as BenchTarget;
  if (!BENCH_TARGETS.includes(target))
    throw new Error(`--db must be one of ${BENCH_TARGETS.join(', ')}`);
  const seconds = Number(values.seconds ?? 10);
  if (!(seconds > 0 && seconds <= 600)) throw new Error('--seconds must be a number in (0, 600]');
  const cells = (values.cells?.split(',') ?? [...CELLS]).map((c) => c.trim()) as CellName[];
  for (const cell of cells) {
    if (!CELLS.includes(cell)) throw new Error(`--cells takes ${CELLS.join(',')}; got ${cell}`);
  }
  const pipelineCapture = values['pg-pipeline-capture'] ?? false;
  if (pipelineCapture && !target.startsWith('pg')) {
    throw new Error('--pg-pipeline-capture is for the PostgreSQL targets (pg15, pg18, pg19)');
  }
  return {
    target,
    seconds,
    cells,
    json: values.json ?? false,
    adapterOptions: pipelineCapture ? { pipelineCapture } : {},
  };
}

async function run(options: Options, cluster: Cluster): Promise<void> {
  await withBenchDatabase(options.target, (db) => runOn(db, options, cluster));
}

async function runOn<C>(db: BenchDatabase<C>, options: Options, cluster: Cluster): Promise<void> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const primaryUrl = cluster.primary().url;
  const replicaUrls = Object.fromEntries(cluster.replicas().map((n) => [n.name, n.url]));
  await resetAndSeed(cluster, db);

  const watchAdapter = await db.createAdapter(primaryUrl, replicaUrls, options.adapterOptions);
  const watch = new ReplicationWatch(watchAdapter, db.orders);
  await watch.waitForReplicas();

  const raw = new RawDriver(
    db.openPool(primaryUrl),
    cluster.replicas().map((node) => db.openPool(node.url)),
  );
  const newRouter = async (routerOptions: BenchRouterOptions = {}) => {
    const adapter = await db.createAdapter(primaryUrl, replicaUrls, options.adapterOptions);
    // The options the README's quick start shows: the adapter and a cluster name.
    const instrumented = new InstrumentedRouter(
      adapter,
      new Router({ adapter, cluster: 'main', ...routerOptions }),
    );
    await instrumented.router.ready();
    return instrumented;
  };
  const main = await newRouter();

  const rows: Row[] = [];
  const info: RunInfo = {
    date: new Date().toString(),
    target: options.target,
    server: `${cluster.flavour} ${cluster.version}`,
    driver: db.driver,
    adapter: db.adapterName,
    adapterOptions:
      Object.keys(options.adapterOptions).length === 0
        ? 'default options'
        : `options ${JSON.stringify(options.adapterOptions)}`,
    node: process.version,
    cpus: os.cpus().length,
    loadAverage: os.loadavg(),
    secondsPerCell: options.seconds,
  };
  if (options.json) process.stdout.write(`${infoJson(info)}\n`);
  const benchRun: BenchRun<C> = {
    db,
    cluster,
    seconds: options.seconds,
    raw,
    tidemark: main,
    watch,
    newRouter,
    progress: (line) => say(`[${new Date().toISOString().slice(11, 19)}] ${line}`),
    emit(row) {
      rows.push(row);
      if (options.json) process.stdout.write(`${rowJson(info, row)}\n`);
    },
  };
  try {
    const cells: Record<CellName, (run: BenchRun<C>) => Promise<void>> = {
      probes: idleProbeCell,
      reads: readCells,
      writes: writeCells,
      server: serverCheckCell,
      bookstore: bookstoreCells,
      paused: pausedBookstoreCells,
    };
    for (const name of CELLS) if (options.cells.includes(name)) await cells[name](benchRun);
  } finally {
    await main.router.close();
    await raw.end();
    await watchAdapter.close();
  }
  if (!options.json) {
    process.stdout.write(`${infoText(info)}\n\n${table(rows)}\n`);
  }
}

async function main(argv: string[]): Promise<number> {
  let options: Options | undefined;
  try {
    options = parseOptions(argv);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return 2;
  }
  if (!options) {
    process.stdout.write(USAGE);
    return 0;
  }
  // Libraries that log with console.log must not corrupt the JSON stream.
  console.log = console.error;
  console.info = console.error;
  process.stderr.write(`starting ${options.target} (primary + 2 replicas)...\n`);
  let cluster: Cluster | undefined;
  const stop = (signal: NodeJS.Signals) => {
    process.stderr.write(`\n${signal}: stopping the cluster...\n`);
    void (cluster?.teardown() ?? Promise.resolve()).finally(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const started = performance.now();
  try {
    cluster = await startCluster(options.target, { replicas: 2, provider: 'local' });
    await run(options, cluster);
  } catch (error) {
    process.stderr.write(
      `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return 1;
  } finally {
    await cluster?.teardown();
  }
  process.stderr.write(`done in ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
  return 0;
}

const code = await main(process.argv.slice(2));
process.stdout.write('', () => process.exit(code));
