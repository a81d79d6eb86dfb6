/**
 * `pnpm bench:model`: the 20k reads/s model. Runs every (strategy, regime) pair, in worker
 * processes when there is more than one core, and prints a table; `--json` prints one JSON
 * object per line and nothing else on stdout. See ../README.md.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_OPTIONS, type ModelOptions, type ModelResult, runModel } from './model.js';
import { REGIMES, type Regime, regimeByName } from './regimes.js';
import { jsonLines, markdownTable, textTable } from './report.js';
import { isTidemark, STRATEGIES, type StrategyName } from './strategies.js';
import { leaderVsLagSvg } from './svg.js';

interface CliOptions {
  readonly json: boolean;
  readonly markdown: boolean;
  readonly progress: boolean;
  readonly svg: string | undefined;
  /** Render saved `--json` output instead of running. */
  readonly from: string | undefined;
  readonly jobs: number;
  readonly regimes: readonly Regime[];
  readonly strategies: readonly StrategyName[];
  readonly model: ModelOptions;
}

interface Job {
  readonly index: number;
  readonly strategy: StrategyName;
  readonly regime: string;
  readonly model: ModelOptions;
}

type WorkerReply =
  | { readonly index: number; readonly result: ModelResult }
  | { readonly index: number; readonly error: string };

const USAGE = `usage: pnpm bench:model [--json | --markdown] [options]

  --json               one JSON object per (strategy, regime) line, nothing else on stdout
  --markdown           the table in Markdown
  --svg FILE           also write the leader-vs-lag chart (SVG) to FILE
  --from FILE          do not run: render the table / chart from saved --json output
  --duration SEC       measured simulated seconds per run (default ${DEFAULT_OPTIONS.durationMs / 1000})
  --warmup SEC         simulated seconds of writes before it (default ${DEFAULT_OPTIONS.warmupMs / 1000})
  --seed N             seed of every random stream (default ${DEFAULT_OPTIONS.seed})
  --rate N             reads per second (default ${DEFAULT_OPTIONS.readsPerSecond})
  --lag-jitter SIGMA   lognormal jitter of replica lags, 0 for none (default ${DEFAULT_OPTIONS.lagJitterSigma})
  --regimes a,b        subset of: ${REGIMES.map((r) => r.name).join(', ')}
  --strategies a,b     subset of: ${STRATEGIES.join(', ')}
  --jobs N             worker processes (default: available cores)
  --fallback-max-concurrent N
                       diagnostics only: tidemark's fallback.maxConcurrent (default: core's)
  --progress           progress on stderr (default unless --json)`;

function parseArgs(argv: readonly string[]): CliOptions {
  let json = false;
  let markdown = false;
  let progress: boolean | undefined;
  let svg: string | undefined;
  let from: string | undefined;
  let jobs = Math.max(1, availableParallelism());
  let regimes: readonly Regime[] = REGIMES;
  let strategies: readonly StrategyName[] = STRATEGIES;
  const model = { ...DEFAULT_OPTIONS };
  const base = process.env.INIT_CWD ?? process.cwd();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new UsageError(`${arg} needs a value`);
      return next;
    };
    const number = (min: number) => {
      const text = value();
      const parsed = Number(text);
      if (!(Number.isFinite(parsed) && parsed >= min)) {
        throw new UsageError(`${arg} must be a number >= ${min}, got ${text}`);
      }
      return parsed;
    };
    switch (arg) {
      case '--':
        break;
      case '--json':
        json = true;
        break;
      case '--markdown':
        markdown = true;
        break;
      case '--progress':
        progress = true;
        break;
      case '--svg':
        svg = resolve(base, value());
        break;
      case '--from':
        from = resolve(base, value());
        break;
      case '--duration':
        model.durationMs = number(0.001) * 1000;
        break;
      case '--warmup':
        model.warmupMs = number(0) * 1000;
        break;
      case '--seed':
        model.seed = Math.floor(number(0));
        break;
      case '--rate':
        model.readsPerSecond = number(1);
        break;
      case '--lag-jitter':
        model.lagJitterSigma = number(0);
        break;
      case '--fallback-max-concurrent':
        model.fallbackMaxConcurrent = Math.floor(number(1));
        break;
      case '--jobs':
        jobs = Math.max(1, Math.floor(number(1)));
        break;
      case '--regimes':
        regimes = value().split(',').map(regimeByName);
        break;
      case '--strategies':
        strategies = value()
          .split(',')
          .map((name) => {
            if (!(STRATEGIES as readonly string[]).includes(name)) {
              throw new UsageError(`unknown strategy ${name}; one of ${STRATEGIES.join(', ')}`);
            }
            return name as StrategyName;
          });
        break;
      case '--help':
      case '-h':
        throw new UsageError('');
      default:
        throw new UsageError(`unknown option ${arg}`);
    }
  }
  if (json && markdown) throw new UsageError('--json and --markdown exclude each other');
  return {
    json,
    markdown,
    progress: progress ?? !json,
    svg,
    from,
    jobs,
    regimes,
    strategies,
    model,
  };
}

class UsageError extends Error {}

/**
 * Heaviest first, so two workers finish together: the real Router costs more per read than the
 * baselines, and more the more reads wait or queue for the primary.
 */
function cost(strategy: StrategyName, regime: Regime): number {
  const lag = regime.lagMs ?? 100;
  return (isTidemark(strategy) ? 4 : 1) * (1 + Math.log10(Math.max(1, lag)));
}

async function runAll(options: CliOptions): Promise<ModelResult[]> {
  const jobs: Job[] = [];
  for (const regime of options.regimes) {
    for (const strategy of options.strategies) {
      jobs.push({ index: jobs.length, strategy, regime: regime.name, model: options.model });
    }
  }
  const results: ModelResult[] = new Array(jobs.length);
  const queue = [...jobs].sort(
    (a, b) => cost(b.strategy, regimeByName(b.regime)) - cost(a.strategy, regimeByName(a.regime)),
  );
  let done = 0;
  const note = (job: Job, result: ModelResult) => {
    results[job.index] = result;
    done++;
    if (options.progress) {
      process.stderr.write(
        `[${done}/${jobs.length}] ${job.strategy} ${job.regime}: ${(result.runtime_ms / 1000).toFixed(1)} s (CPU ${(result.cpu_ms / 1000).toFixed(1)} s)\n`,
      );
    }
  };
  const workers = Math.min(options.jobs, jobs.length);
  if (workers <= 1) {
    for (const job of queue) note(job, await runJob(job));
    return results;
  }
  const script = fileURLToPath(import.meta.url);
  await Promise.all(
    Array.from({ length: workers }, async () => {
      const child = fork(script, ['--worker'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      try {
        for (let job = queue.shift(); job; job = queue.shift()) {
          note(job, await ask(child, job));
        }
      } finally {
        child.disconnect();
      }
    }),
  );
  return results;
}

function runJob(job: Job): Promise<ModelResult> {
  return runModel(job.strategy, regimeByName(job.regime), job.model);
}

function ask(child: ChildProcess, job: Job): Promise<ModelResult> {
  return new Promise((resolvePromise, reject) => {
    const onMessage = (reply: WorkerReply) => {
      if (reply.index !== job.index) return;
      cleanup();
      if ('error' in reply) reject(new Error(`${job.strategy} ${job.regime}: ${reply.error}`));
      else resolvePromise(reply.result);
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`worker exited (${code}) during ${job.strategy} ${job.regime}`));
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
    child.send(job);
  });
}

function worker(): void {
  process.on('message', (job: Job) => {
    runJob(job).then(
      (result) => process.send?.({ index: job.index, result } satisfies WorkerReply),
      (error: unknown) =>
        process.send?.({
          index: job.index,
          error: error instanceof Error ? (error.stack ?? error.message) : String(error),
        } satisfies WorkerReply),
    );
  });
  process.on('disconnect', () => process.exit(0));
}

function load(file: string): ModelResult[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as ModelResult);
}

/** The settings the results were made with: rendering saved results, theirs. */
function settingsOf(options: CliOptions, results: readonly ModelResult[]): ModelOptions {
  return options.from && results[0] ? results[0].options : options.model;
}

function header(options: CliOptions, results: readonly ModelResult[]): string {
  const m = settingsOf(options, results);
  const cpu = results.reduce((sum, r) => sum + r.cpu_ms, 0) / 1000;
  return [
    'The 20k reads/s model: a discrete-event simulation driving the real core Router',
    `(4 replicas, ${m.readsPerSecond.toLocaleString('en-US')} reads/s, ${m.writesPerSecond.toLocaleString('en-US')} writes/s; ${m.freshTokenShare * 100}% of reads carry a token from a write < ${m.freshMaxAgeMs / 1000} s old, ${m.olderTokenShare * 100}% an older one (${m.olderTokenAgeMs[0] / 1000}-${m.olderTokenAgeMs[1] / 1000} s);`,
    ` ${m.durationMs / 1000} simulated s per run after ${m.warmupMs / 1000} s of warm-up; seed ${m.seed}; lag jitter ${m.lagJitterSigma}; ${cpu.toFixed(0)} s of CPU in runs)`,
    'oracle: reads no replica could serve (none up had applied the write, or did within 250 ms);',
    'policy: the same, replicas more than 10 s stale excluded (health.maxLagSeconds)',
    ...(m.fallbackMaxConcurrent === undefined
      ? []
      : [`NOT the defaults: tidemark runs with fallback.maxConcurrent ${m.fallbackMaxConcurrent}`]),
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === '--worker') return worker();
  let options: CliOptions;
  try {
    options = parseArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    if (error.message) process.stderr.write(`${error.message}\n\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = error.message ? 2 : 0;
    return;
  }
  const started = performance.now();
  const results = options.from ? load(options.from) : await runAll(options);
  const wallSeconds = (performance.now() - started) / 1000;
  if (options.json) process.stdout.write(`${jsonLines(results)}\n`);
  else if (options.markdown) process.stdout.write(`${markdownTable(results)}\n`);
  else {
    process.stdout.write(`${header(options, results)}${textTable(results)}\n`);
    if (!options.from) {
      process.stdout.write(`\nwall time ${wallSeconds.toFixed(1)} s, ${options.jobs} job(s)\n`);
    }
  }
  if (options.svg) {
    const m = settingsOf(options, results);
    mkdirSync(dirname(options.svg), { recursive: true });
    writeFileSync(
      options.svg,
      leaderVsLagSvg(results, {
        title: 'The 20k reads/s model: leader load against replica lag',
        subtitle: `Simulation driving the real core Router; 4 replicas, ${m.readsPerSecond.toLocaleString('en-US')} reads/s, ${m.durationMs / 1000} simulated s per point, seed ${m.seed}`,
      }),
    );
    if (options.progress) process.stderr.write(`wrote ${options.svg}\n`);
  }
  if (options.progress && options.json && !options.from) {
    process.stderr.write(`wall time ${wallSeconds.toFixed(1)} s\n`);
  }
}

await main();
