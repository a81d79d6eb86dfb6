import { parseArgs } from 'node:util';
import { DB_NAMES, type DbName } from './databases/types.js';
import { DemoError, DemoErrorCode } from './errors.js';
import { DEFAULT_REPORT_FILE } from './report/output.js';
import { VIA_NAMES, VIA_STRATEGIES, type ViaName } from './via/types.js';

export const STRATEGY_NAMES = ['naive', 'time-window', 'lab-router', 'tidemark', 'shadow'] as const;
export type StrategyName = (typeof STRATEGY_NAMES)[number];

export const SCENARIO_NAMES = ['idle', 'paused'] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

/** Everything one demo invocation needs; built from the command line by {@link parseOptions}. */
export interface DemoOptions {
  /**
   * Which database: `pg` (default, embedded PostgreSQL 18), `mysql` (9.7), `mariadb` (10.11) or
   * `mongo-sim` (MongoDB on the in-process replica-set simulator).
   */
  readonly db: DbName;
  /** Orders in the `idle` scenario. */
  readonly orders: number;
  /** Orders in the `paused` scenario. */
  readonly pausedOrders: number;
  readonly customers: number;
  /** Readers per order besides the writer. */
  readonly otherReaders: number;
  readonly scenarios: readonly ScenarioName[];
  readonly strategies: readonly StrategyName[];
  /**
   * Run the workload through an ORM or query builder instead of the raw driver: `naive` is then
   * the tool's own replica helper and `tidemark` Tidemark's front door for it.
   */
  readonly via: ViaName | undefined;
  /** Your own cluster instead of the local one; both or neither. */
  readonly external: { readonly primaryUrl: string; readonly replicaUrl: string } | undefined;
  readonly seed: number;
  readonly tidemark: {
    /** Bounded wait per read, ms, or `auto` (learned, 250 ms ceiling). */
    readonly waitBudgetMs: number | 'auto';
    /** Primary fallbacks refilled per second. */
    readonly fallbackRatePerSecond: number;
    /** Bucket size; undefined: every read of the run (the cap never bites in the demo). */
    readonly fallbackBurst: number | undefined;
  };
  readonly json: boolean;
  /**
   * Where to write the HTML report (`--report PATH`, relative to the directory the command ran
   * in); undefined with `--no-report`.
   */
  readonly report: string | undefined;
  readonly help: boolean;
}

export const USAGE = `Usage: pnpm demo [options]

Reruns the Bookstore experiment on a primary and one replica (embedded PostgreSQL 18 by default):
for each order, the customer writes it, then the customer and four other customers read their
latest 20 orders. Counts reads whose list lacks one of the reader's own acknowledged orders.

Options:
  --db D                 pg | mysql | mariadb | mongo-sim (default pg). pg: embedded
                         PostgreSQL 18; mysql / mariadb: the test harness's local MySQL 9.7 /
                         MariaDB 10.11 primary + 1 replica (install the servers first: sudo bash
                         scripts/setup/mysql.sh); mongo-sim: @tidemark/mongodb on the harness's
                         in-process MongoDB replica-set SIMULATOR, not a real mongod (no URLs)
  --orders N             orders in the idle scenario (default 1000)
  --paused-orders N      orders in the paused scenario (default 300)
  --customers N          number of customers (default 100)
  --scenario S           idle | paused | all (default all)
  --strategy A,B         any of naive,time-window,lab-router,tidemark,shadow (default all);
                         shadow: Tidemark's shadow mode, every read on the primary, with its
                         predictions printed next to what naive and tidemark measured
  --primary-url URL      run against your own primary ...
  --replica-url URL      ... and its replica (both required together): postgres:// URLs with
                         --db pg, mysql:// URLs with --db mysql or mariadb (none with --db
                         mongo-sim). The paused scenario pauses the replica:
                         pg_wal_replay_pause() (superuser), or
                         STOP REPLICA SQL_THREAD / STOP SLAVE SQL_THREAD (REPLICATION_SLAVE_ADMIN
                         / REPLICATION SLAVE ADMIN, or SUPER).
  --via TOOL             run the queries through ${VIA_NAMES.join(' | ')} instead of the raw
                         driver (--db pg, mysql or mariadb): naive is then the tool's own replica
                         helper (kysely-replication, Drizzle's withReplicas,
                         @prisma/extension-read-replicas), tidemark Tidemark's front door for it
                         (@tidemark/kysely, @tidemark/drizzle, @tidemark/prisma; prisma: --db pg
                         only); only those two
                         strategies run
  --seed N               workload seed (default 1)
  --wait-budget MS       tidemark: bounded wait per read (default 250), or auto: learned from
                         the catch-up times the router observes, at most 250 ms
  --fallback-rate N      tidemark: primary fallbacks refilled per second (default 100)
  --fallback-burst N     tidemark: fallback bucket size (default: every read of the run)
  --json                 one JSON object per run on stdout, nothing else (logs go to stderr)
  --report PATH          write the HTML report (charts, one self-contained file) to PATH,
                         relative to the directory you ran the command in (default
                         ./${DEFAULT_REPORT_FILE} there); its path is printed at the end (on
                         stderr with --json)
  --no-report            write no HTML report
  -h, --help             show this help
`;

/** Parse the command line (without `node script`). Throws {@link DemoError} `BOOKSTORE_USAGE`. */
export function parseOptions(argv: readonly string[]): DemoOptions {
  // `pnpm demo -- --json` forwards the separator itself; accept it.
  const args = argv[0] === '--' ? argv.slice(1) : [...argv];
  let values: ReturnType<typeof parse>['values'];
  try {
    values = parse(args).values;
  } catch (error) {
    throw usageError(error instanceof Error ? error.message : String(error));
  }
  const primaryUrl = values['primary-url'];
  const replicaUrl = values['replica-url'];
  const db = database(values.db ?? 'pg');
  if (db === 'mongo-sim' && (primaryUrl !== undefined || replicaUrl !== undefined)) {
    throw usageError(
      '--db mongo-sim runs the MongoDB replica-set simulator inside the demo process, so it takes no --primary-url / --replica-url. Drop them, or use --db pg|mysql|mariadb for your own cluster.',
    );
  }
  if ((primaryUrl === undefined) !== (replicaUrl === undefined)) {
    throw usageError('--primary-url and --replica-url go together: give both, or neither.');
  }
  if (primaryUrl !== undefined) checkScheme(db, '--primary-url', primaryUrl);
  if (replicaUrl !== undefined) checkScheme(db, '--replica-url', replicaUrl);
  const customers = integer('--customers', values.customers, 100, 6);
  const via = viaOption(values.via, db);
  const burst = values['fallback-burst'];
  return {
    db,
    orders: integer('--orders', values.orders, 1000, 1),
    pausedOrders: integer('--paused-orders', values['paused-orders'], 300, 1),
    customers,
    otherReaders: 4,
    scenarios: scenarios(values.scenario ?? 'all'),
    strategies: via ? viaStrategies(values.strategy, via) : strategies(values.strategy),
    via,
    external:
      primaryUrl !== undefined && replicaUrl !== undefined ? { primaryUrl, replicaUrl } : undefined,
    seed: integer('--seed', values.seed, 1, 0),
    tidemark: {
      waitBudgetMs:
        values['wait-budget'] === 'auto'
          ? 'auto'
          : integer('--wait-budget', values['wait-budget'], 250, 0),
      fallbackRatePerSecond: integer('--fallback-rate', values['fallback-rate'], 100, 0),
      fallbackBurst: burst === undefined ? undefined : integer('--fallback-burst', burst, 1, 1),
    },
    json: values.json ?? false,
    report: reportOption(values.report, values['no-report'] ?? false),
    help: values.help ?? false,
  };
}

function parse(args: string[]) {
  return parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: {
      db: { type: 'string' },
      orders: { type: 'string' },
      'paused-orders': { type: 'string' },
      customers: { type: 'string' },
      scenario: { type: 'string' },
      strategy: { type: 'string' },
      via: { type: 'string' },
      'primary-url': { type: 'string' },
      'replica-url': { type: 'string' },
      seed: { type: 'string' },
      'wait-budget': { type: 'string' },
      'fallback-rate': { type: 'string' },
      'fallback-burst': { type: 'string' },
      json: { type: 'boolean' },
      report: { type: 'string' },
      'no-report': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

function integer(flag: string, text: string | undefined, fallback: number, min: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw usageError(`${flag} must be an integer >= ${min}, got "${text}".`);
  }
  return value;
}

function database(text: string): DbName {
  if ((DB_NAMES as readonly string[]).includes(text)) return text as DbName;
  throw usageError(`--db must be ${DB_NAMES.join(', ')}; got "${text}".`);
}

/** A URL for the other kind of database would fail later with a confusing driver error. */
function checkScheme(db: DbName, flag: string, url: string): void {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  const wanted = db === 'pg' ? ['postgres', 'postgresql'] : ['mysql', 'mariadb'];
  if (scheme !== undefined && wanted.includes(scheme)) return;
  const hint =
    scheme === 'mongodb' || scheme === 'mongodb+srv'
      ? ' MongoDB runs only on the in-process replica-set simulator (--db mongo-sim), which takes no URLs.'
      : scheme === 'mysql' || scheme === 'mariadb'
        ? ' Pass --db mysql or --db mariadb for a MySQL-family cluster.'
        : scheme === 'postgres' || scheme === 'postgresql'
          ? ' Pass --db pg (the default) for PostgreSQL.'
          : '';
  throw usageError(`${flag} must be a ${wanted[0]}:// URL with --db ${db}.${hint}`);
}

function scenarios(text: string): ScenarioName[] {
  if (text === 'all') return [...SCENARIO_NAMES];
  if ((SCENARIO_NAMES as readonly string[]).includes(text)) return [text as ScenarioName];
  throw usageError(`--scenario must be idle, paused or all, got "${text}".`);
}

function strategies(text: string | undefined): StrategyName[] {
  if (text === undefined) return [...STRATEGY_NAMES];
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !(STRATEGY_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0 || names.length === 0) {
    throw usageError(
      `--strategy takes a comma-separated list of ${STRATEGY_NAMES.join(', ')}; got "${text}".`,
    );
  }
  // Keep the canonical order so output is comparable between invocations.
  return STRATEGY_NAMES.filter((name) => names.includes(name));
}

function viaOption(text: string | undefined, db: DbName): ViaName | undefined {
  if (text === undefined) return undefined;
  if (!(VIA_NAMES as readonly string[]).includes(text)) {
    throw usageError(
      `--via takes ${VIA_NAMES.join(', ')}; got "${text}". Front doors for other tools are not part of this version.`,
    );
  }
  if (db === 'mongo-sim') {
    throw usageError(`--via ${text} is an SQL tool: use it with --db pg, mysql or mariadb.`);
  }
  if (text === 'prisma' && db !== 'pg') {
    throw usageError(
      `--via prisma runs on PostgreSQL only (@tidemark/prisma is built on @prisma/adapter-pg): use it with --db pg, not --db ${db}.`,
    );
  }
  return text as ViaName;
}

function viaStrategies(text: string | undefined, via: ViaName): StrategyName[] {
  if (text === undefined) return [...VIA_STRATEGIES];
  const chosen = strategies(text);
  const other = chosen.filter((name) => !(VIA_STRATEGIES as readonly string[]).includes(name));
  if (other.length > 0) {
    throw usageError(
      `--via ${via} runs ${VIA_STRATEGIES.join(' and ')} only (the tool's own replica helper and Tidemark's front door); drop ${other.join(', ')}.`,
    );
  }
  return chosen;
}

function reportOption(path: string | undefined, none: boolean): string | undefined {
  if (none && path !== undefined) throw usageError('--report and --no-report exclude each other.');
  if (none) return undefined;
  if (path === '') throw usageError('--report needs a file path.');
  return path ?? DEFAULT_REPORT_FILE;
}

function usageError(detail: string): DemoError {
  return new DemoError(DemoErrorCode.Usage, `${detail} Run with --help for the options.`);
}
