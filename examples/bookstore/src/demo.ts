import { type Database, type DemoCluster, withDatabase } from './databases/index.js';
import { LIST_LENGTH } from './ledger.js';
import type { DemoOptions, ScenarioName, StrategyName } from './options.js';
import { renderReport } from './report/html.js';
import { writeReport } from './report/output.js';
import { ReportRecorder, type RunRecorder } from './report/recorder.js';
import { formatJson, formatLine, formatShadowComparison, formatSummary } from './report.js';
import type { RunResult } from './result.js';
import { createStrategy, describeStrategy } from './strategies/index.js';
import type { TidemarkSettings } from './strategies/tidemark-settings.js';
import { type ViaStrategyName, viaDescription, withViaRun } from './via/index.js';
import { runWorkload, type WorkloadSpec } from './workload.js';

/** Where the demo writes. In JSON mode `out` receives JSON lines only. */
export interface DemoIo {
  /** Results (and, in human mode, the header and summary). */
  out(line: string): void;
  /** Progress and diagnostics: stderr in the CLI. */
  log(line: string): void;
  /** Called with the cluster once it is up, so the caller can tear it down on a signal. */
  onCluster?(cluster: DemoCluster): void;
  /**
   * True once nobody reads the results any more (the CLI's stdout was closed): the demo stops
   * before the next run, and tears the cluster down as usual.
   */
  stopped?(): boolean;
}

/**
 * Run every selected strategy in every selected scenario on a fresh `orders` table each time,
 * on the database of `options.db`, and print one result per run. Returns the results in run order.
 */
export function runDemo(options: DemoOptions, io: DemoIo): Promise<RunResult[]> {
  return withDatabase(options.db, (database) => runDemoOn(database, options, io));
}

async function runDemoOn<C>(
  database: Database<C>,
  options: DemoOptions,
  io: DemoIo,
): Promise<RunResult[]> {
  const human = !options.json;
  const say = (line = '') => {
    if (human) io.out(line);
  };
  const tidemark: TidemarkSettings = options.tidemark;

  say('Tidemark Bookstore demo: read your own orders from a replica, four ways');
  const clusterStarted = performance.now();
  io.log(options.external ? 'connecting to your cluster...' : database.texts.starting);
  const cluster = options.external
    ? await database.connectExternalCluster(
        options.external.primaryUrl,
        options.external.replicaUrl,
      )
    : await database.startLocalCluster();
  io.onCluster?.(cluster);
  const results: RunResult[] = [];
  const report = options.report
    ? new ReportRecorder({
        db: database.name,
        via: options.via,
        cluster: cluster.description,
        seed: options.seed,
        customers: options.customers,
        waitBudgetMs: options.tidemark.waitBudgetMs,
        generatedAt: new Date().toISOString(),
      })
    : undefined;
  try {
    const startup = ((performance.now() - clusterStarted) / 1000).toFixed(1);
    say(`  cluster     ${cluster.description}; ready in ${startup} s`);
    if (database.texts.notice) say(`  note        ${database.texts.notice}`);
    say(
      `  workload    ${options.customers} customers; per order the customer writes it, then the customer and ${options.otherReaders} other customers read their latest ${LIST_LENGTH} orders (seed ${options.seed})`,
    );
    for (const scenario of options.scenarios) {
      say(`  ${scenario.padEnd(11)} ${describeScenario(scenario, options, database)}`);
    }
    const plannedReads = options.scenarios
      .map((scenario) => `${scenario} ${readsOf(scenario, options)}`)
      .join(', ');
    for (const name of options.strategies) {
      const text = options.via
        ? await viaDescription(options.via, name as ViaStrategyName)
        : describeStrategy(name, database, tidemark, plannedReads);
      say(`  ${name.padEnd(11)} ${text}`);
    }
    say(
      "  missing_in_list = reads whose list lacks one of the reader's own acknowledged orders that belongs in their latest 20",
    );
    say();

    for (const scenario of options.scenarios) {
      for (const name of options.strategies) {
        if (io.stopped?.()) return results;
        io.log(`running ${scenario}/${name}...`);
        const recorder = report?.run(scenario, name);
        const result = await runOne(database, cluster, scenario, name, options, io, recorder);
        recorder?.finish(result);
        results.push(result);
        io.out(options.json ? formatJson(result) : formatLine(result));
      }
    }
    say();
    say(formatSummary(results));
    const comparison = formatShadowComparison(results);
    if (comparison !== '') {
      say();
      say(comparison);
    }
    if (database.texts.notice) say(`note: ${database.texts.notice}`);
    if (report && options.report) {
      const notes = [comparison, database.texts.notice ?? ''].filter((note) => note !== '');
      const path = await writeReport(options.report, renderReport(report.data(notes)));
      // --json: stdout carries nothing but the result lines.
      (human ? io.out : io.log)(`report: ${path}`);
    }
    return results;
  } finally {
    // Leave a user's own cluster as it was; the embedded one is deleted anyway.
    if (options.external) await cluster.dropDemoData().catch(() => undefined);
    await cluster.close();
  }
}

async function runOne<C>(
  database: Database<C>,
  cluster: DemoCluster,
  scenario: ScenarioName,
  name: StrategyName,
  options: DemoOptions,
  io: DemoIo,
  recorder: RunRecorder | undefined,
): Promise<RunResult> {
  const orders = ordersOf(scenario, options);
  await cluster.resetOrders();
  const paused = scenario === 'paused';
  if (paused) await cluster.pauseReplay();
  try {
    const context = {
      primaryUrl: cluster.primaryUrl,
      replicaUrl: cluster.replicaUrl,
      plannedReads: readsOf(scenario, options),
      observeRouter: recorder?.observeRouter,
    };
    const spec: WorkloadSpec = {
      db: database.name,
      scenario,
      orders,
      customers: options.customers,
      otherReaders: options.otherReaders,
      // Same seed for every strategy of a scenario: identical writers and readers.
      seed: options.seed + (scenario === 'idle' ? 0 : 1),
      log: io.log,
      trace: recorder,
    };
    // Built after the pause, so a strategy's monitor starts from the replica's real state.
    if (options.via) {
      const via = options.via;
      return await withViaRun(
        via,
        name as ViaStrategyName,
        database,
        context,
        options.tidemark,
        async ({ strategy, queries }) => {
          try {
            return { ...(await runWorkload(strategy, queries, spec)), via };
          } finally {
            await strategy.close();
          }
        },
      );
    }
    const strategy = await createStrategy(name, database, context, options.tidemark);
    try {
      return await runWorkload(strategy, database.orders, spec);
    } finally {
      await strategy.close();
    }
  } finally {
    if (paused) {
      await cluster.resumeReplay();
      await cluster.waitForReplicaCatchUp();
    }
  }
}

function ordersOf(scenario: ScenarioName, options: DemoOptions): number {
  return scenario === 'idle' ? options.orders : options.pausedOrders;
}

function readsOf(scenario: ScenarioName, options: DemoOptions): number {
  return ordersOf(scenario, options) * (1 + options.otherReaders);
}

function describeScenario<C>(
  scenario: ScenarioName,
  options: DemoOptions,
  database: Database<C>,
): string {
  return scenario === 'idle'
    ? `${options.orders} orders, replication running normally`
    : `${options.pausedOrders} orders with ${database.texts.paused} for the whole run (resumed afterwards)`;
}
