import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESULT_FIELDS, SHADOW_FIELDS } from '../src/result.js';

// A small version of `pnpm demo --json`, run as a child process exactly as the CLI runs, so the
// test also proves that stdout carries nothing but JSON lines.
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const READS_PER_ORDER = 5;
/** Each run also writes its HTML report (as users get it by default), here rather than the repo. */
const REPORT_DIR = mkdtempSync(join(tmpdir(), 'tidemark-demo-test-'));
let reports = 0;
afterAll(() => rmSync(REPORT_DIR, { recursive: true, force: true }));

/** One small run per database; MySQL-family runs are smaller to keep the file under 2 minutes. */
const RUNS = [
  {
    db: 'pg',
    cluster: 'embedded PostgreSQL 18',
    idleOrders: 60,
    pausedOrders: 30,
    pauseSeen: true,
  },
  // These need the servers of scripts/setup/mysql.sh; without them the CLI exits with a message
  // naming that script, and the test fails with it (a missing database is not a pass).
  { db: 'mysql', cluster: 'local MySQL 9.7', idleOrders: 30, pausedOrders: 20, pauseSeen: true },
  {
    db: 'mariadb',
    cluster: 'local MariaDB 10.11',
    idleOrders: 30,
    pausedOrders: 20,
    pauseSeen: true,
  },
  // In-process: nothing to install. Not a real mongod: the replica-set SIMULATOR of the harness.
  {
    db: 'mongo-sim',
    cluster: 'the in-process MongoDB replica-set SIMULATOR',
    idleOrders: 60,
    pausedOrders: 30,
    // The simulator's replica does not report its replay as paused: reads wait their budget.
    pauseSeen: false,
  },
] as const;

interface Line {
  [field: string]: unknown;
  scenario: string;
  strategy: string;
}

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/main.ts',
        ...args,
        '--report',
        join(REPORT_DIR, `${++reports}.html`),
      ],
      { cwd: PACKAGE_DIR, timeout: 110_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** A `--json` run that must succeed: its stdout, and that stdout parsed as one object per line. */
async function runJson(args: string[]): Promise<{ stdout: string; lines: Line[] }> {
  const cli = await runCli([...args, '--json']);
  if (cli.code !== 0) {
    throw new Error(`demo ${args.join(' ')} exited with ${cli.code}; stderr:\n${cli.stderr}`);
  }
  const lines = cli.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Line);
  return { stdout: cli.stdout, lines };
}

/** The output line of (scenario, strategy); throws when the run printed none. */
function lineOf(lines: readonly Line[], scenario: string, strategy: string): Line {
  const line = lines.find((l) => l.scenario === scenario && l.strategy === strategy);
  if (!line) throw new Error(`no output line for ${scenario}/${strategy}`);
  return line;
}

for (const run of RUNS) {
  describe(`pnpm demo --db ${run.db} --json (small run on ${run.cluster})`, () => {
    let lines: Line[] = [];
    let cli: { stdout: string; lines: Line[] };

    beforeAll(async () => {
      const sizes = [
        '--orders',
        String(run.idleOrders),
        '--paused-orders',
        String(run.pausedOrders),
      ];
      cli = await runJson(['--db', run.db, ...sizes]);
      lines = cli.lines;
    }, 115_000);

    const find = (scenario: string, strategy: string): Line => lineOf(lines, scenario, strategy);

    it('prints one JSON object per (scenario, strategy) with every documented field', () => {
      expect(cli.stdout.endsWith('\n')).toBe(true);
      expect(lines).toHaveLength(10);
      for (const line of lines) {
        const shadow = line.strategy === 'shadow';
        expect(Object.keys(line)).toEqual([...RESULT_FIELDS, ...(shadow ? SHADOW_FIELDS : [])]);
        expect(line.db).toBe(run.db);
        expect(['idle', 'paused']).toContain(line.scenario);
        expect(['naive', 'time-window', 'lab-router', 'tidemark', 'shadow']).toContain(
          line.strategy,
        );
        const numeric = RESULT_FIELDS.filter(
          (f) => f !== 'scenario' && f !== 'strategy' && f !== 'db',
        );
        for (const field of numeric) {
          const value = line[field];
          const nullable = field === 'wait_ms_p50';
          expect(typeof value === 'number' || (nullable && value === null), field).toBe(true);
        }
        const orders = line.scenario === 'idle' ? run.idleOrders : run.pausedOrders;
        expect(line.orders).toBe(orders);
        expect(line.reads).toBe(orders * READS_PER_ORDER);
        expect((line.replica_reads as number) + (line.primary_reads as number)).toBe(
          (line.reads as number) - (line.errors as number),
        );
      }
    });

    it('tidemark never misses an acknowledged order, idle or paused', () => {
      for (const scenario of ['idle', 'paused']) {
        const line = find(scenario, 'tidemark');
        expect(line.errors, scenario).toBe(0);
        // The check must have had something to check.
        expect(line.checked_reads as number, scenario).toBeGreaterThan(0);
        expect(line.missing_in_list, scenario).toBe(0);
      }
      // With replay paused the replica never has the writes: the primary must have served them.
      expect(find('paused', 'tidemark').primary_reads as number).toBeGreaterThan(0);
    });

    it('naive (the control) misses every checked read with replay paused', () => {
      const line = find('paused', 'naive');
      expect(line.missing_in_list as number).toBeGreaterThan(0);
      expect(line.missing_in_list).toBe(line.checked_reads);
      expect(line.missing_after_write).toBe(run.pausedOrders);
      expect(line.primary_reads).toBe(0);
    });

    it('shadow serves every read from the primary; with replay paused its predictions equal what naive and tidemark measured', () => {
      for (const scenario of ['idle', 'paused']) {
        const shadow = find(scenario, 'shadow');
        expect(shadow.primary_reads, scenario).toBe(shadow.reads);
        expect(shadow.missing_in_list, scenario).toBe(0);
        expect(shadow.errors, scenario).toBe(0);
        expect(
          (shadow.predicted_replica_reads as number) + (shadow.predicted_primary_reads as number),
        ).toBe(shadow.reads);
      }
      // Paused replay is deterministic: every own order is missing from the replica, so every
      // checked read would miss on naive and needs the primary under tidemark.
      const shadow = find('paused', 'shadow');
      const naive = find('paused', 'naive');
      const tidemark = find('paused', 'tidemark');
      expect(shadow.predicted_naive_missing).toBe(naive.missing_in_list);
      expect(shadow.predicted_naive_missing_after_write).toBe(naive.missing_after_write);
      expect(shadow.predicted_primary_reads).toBe(naive.checked_reads);
      expect(shadow.predicted_errors).toBe(tidemark.errors);
      if (run.pauseSeen) {
        // The monitor sees the pause, so no read waits and every run takes about as long.
        expect(shadow.predicted_primary_reads).toBe(tidemark.primary_reads);
        expect(shadow.predicted_replica_reads).toBe(tidemark.replica_reads);
      }
      // Where reads wait out their budget (the simulator), the tidemark run lasts long enough
      // for the stalled replica to pass the health limit (10 s behind) and serve nothing at all;
      // the shadow run, whose predictions wait in the background, ends before that.
    });

    it("idle: shadow's tidemark predictions agree with tidemark's measurements within 5% of reads", () => {
      // Separate runs of the same seeded workload: whether a replica has applied a write a few
      // hundred microseconds after it is a race that each run decides anew, so waits and the
      // rare fallback may differ by a few reads. The naive prediction is not compared here: the
      // shadow app spends a primary probe settling each write's position before its next read,
      // which the naive app does not, so fewer of its reads race the replay (see the README).
      const shadow = find('idle', 'shadow');
      const tidemark = find('idle', 'tidemark');
      const tolerance = Math.ceil(0.05 * (shadow.reads as number));
      const near = (predicted: unknown, measured: unknown, what: string) =>
        expect(
          Math.abs((predicted as number) - (measured as number)),
          `${what}: predicted ${predicted}, measured ${measured}`,
        ).toBeLessThanOrEqual(tolerance);
      near(shadow.predicted_replica_reads, tidemark.replica_reads, 'replica reads');
      near(shadow.predicted_primary_reads, tidemark.primary_reads, 'primary reads');
      near(shadow.predicted_waits, tidemark.waits, 'waits');
    });
  });
}

describe('pnpm demo --db mongo-sim (human output, usage)', () => {
  it('names the simulator in the header and under the summary; each line ends db=mongo-sim', async () => {
    const cli = await runCli([
      '--db',
      'mongo-sim',
      '--scenario',
      'paused',
      '--strategy',
      'naive',
      '--paused-orders',
      '5',
    ]);
    expect(cli.code, cli.stderr).toBe(0);
    const out = cli.stdout.split('\n');
    const cluster = out.find((line) => line.startsWith('  cluster '));
    expect(cluster).toContain('MongoDB replica-set SIMULATOR');
    expect(cluster).toContain('not a real mongod');
    expect(out.filter((line) => line.includes('not a real mongod')).length).toBeGreaterThanOrEqual(
      3,
    );
    const result = out.find((line) => line.startsWith('scenario=paused strategy=naive '));
    expect(result?.endsWith(' db=mongo-sim')).toBe(true);
    expect(cli.stderr).toContain('MongoDB replica-set SIMULATOR');
  });

  it('refuses URLs with a usage error before starting anything', async () => {
    const cli = await runCli([
      '--db',
      'mongo-sim',
      '--primary-url',
      'mongodb://127.0.0.1:1/',
      '--replica-url',
      'mongodb://127.0.0.1:2/',
    ]);
    expect(cli.code).toBe(2);
    expect(cli.stdout).toBe('');
    expect(cli.stderr).toContain('BOOKSTORE_USAGE');
    expect(cli.stderr).toContain('--db mongo-sim');
  });
});

/**
 * `--via`: the same workload written in an ORM or query builder. `naive` is the tool's own
 * replica helper (the control: it must miss with replay paused), `tidemark` Tidemark's front
 * door for that tool (it must miss nothing).
 */
const VIA_RUNS = [
  { via: 'kysely', db: 'pg', idleOrders: 40, pausedOrders: 20 },
  { via: 'kysely', db: 'mysql', idleOrders: 30, pausedOrders: 20 },
  { via: 'drizzle', db: 'pg', idleOrders: 40, pausedOrders: 20 },
  { via: 'drizzle', db: 'mysql', idleOrders: 30, pausedOrders: 20 },
  { via: 'prisma', db: 'pg', idleOrders: 40, pausedOrders: 20 },
] as const;

for (const run of VIA_RUNS) {
  describe(`pnpm demo --via ${run.via} --db ${run.db} --json`, () => {
    let lines: Line[] = [];

    beforeAll(async () => {
      const sizes = [
        '--orders',
        String(run.idleOrders),
        '--paused-orders',
        String(run.pausedOrders),
      ];
      lines = (await runJson(['--via', run.via, '--db', run.db, ...sizes])).lines;
    }, 115_000);

    const find = (scenario: string, strategy: string): Line => lineOf(lines, scenario, strategy);

    it('prints naive and tidemark per scenario, each with via last', () => {
      expect(lines.map((l) => `${l.scenario}/${l.strategy}`)).toEqual([
        'idle/naive',
        'idle/tidemark',
        'paused/naive',
        'paused/tidemark',
      ]);
      for (const line of lines) {
        expect(Object.keys(line)).toEqual([...RESULT_FIELDS, 'via']);
        expect(line.via).toBe(run.via);
        expect(line.db).toBe(run.db);
        expect(line.errors).toBe(0);
      }
    });

    it("the tool's own replica helper misses every checked read with replay paused; Tidemark's front door none", () => {
      const naive = find('paused', 'naive');
      expect(naive.missing_in_list as number).toBeGreaterThan(0);
      expect(naive.missing_in_list).toBe(naive.checked_reads);
      expect(naive.missing_after_write).toBe(run.pausedOrders);
      for (const scenario of ['idle', 'paused']) {
        const tidemark = find(scenario, 'tidemark');
        expect(tidemark.checked_reads as number, scenario).toBeGreaterThan(0);
        expect(tidemark.missing_in_list, scenario).toBe(0);
      }
      expect(find('paused', 'tidemark').primary_reads).toBe(naive.checked_reads);
    });
  });
}

describe('pnpm demo --via (usage)', () => {
  it('refuses a tool without a front door, SQL tools on MongoDB, and other strategies', async () => {
    const cases: Array<[string[], string]> = [
      [['--via', 'typeorm'], '--via takes kysely, drizzle, prisma'],
      [['--via', 'prisma', '--db', 'mysql'], '--via prisma runs on PostgreSQL only'],
      [['--via', 'kysely', '--db', 'mongo-sim'], 'is an SQL tool'],
      [['--via', 'kysely', '--strategy', 'naive,lab-router'], 'drop lab-router'],
    ];
    for (const [args, message] of cases) {
      const cli = await runCli(args);
      expect(cli.code, args.join(' ')).toBe(2);
      expect(cli.stdout).toBe('');
      expect(cli.stderr).toContain('BOOKSTORE_USAGE');
      expect(cli.stderr).toContain(message);
    }
  });
});

describe('pnpm -s demo --json | head (a reader that stops reading)', () => {
  it('stops after the run under way, tears the cluster down and exits 0 instead of crashing on EPIPE', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/main.ts',
        '--db',
        'mongo-sim',
        '--orders',
        '30',
        '--json',
        '--no-report',
      ],
      { cwd: PACKAGE_DIR, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    let first = '';
    // Like `head -1`: read the first line, then close the pipe.
    child.stdout.on('data', (chunk: Buffer) => {
      first += chunk.toString();
      if (first.includes('\n')) child.stdout.destroy();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(JSON.parse(first.split('\n')[0] as string).strategy).toBe('naive');
    expect(stderr).not.toContain('EPIPE');
    expect(stderr).toContain('stdout was closed: stopped early');
    expect(code).toBe(0);
    // It stopped early: the paused scenario never ran.
    expect(stderr).not.toContain('running paused/');
  }, 60_000);
});
