import type { DemoCluster } from './databases/index.js';
import { runDemo } from './demo.js';
import { DemoError } from './errors.js';
import { parseOptions, USAGE } from './options.js';

/**
 * CLI entry: `pnpm demo [--json] [options]`. Results go to stdout; everything else to stderr, so
 * `--json` output is nothing but one JSON object per line.
 */
/** Set when a write to stdout failed with EPIPE: nobody reads the results any more. */
let stdoutClosed = false;

async function main(argv: readonly string[]): Promise<number> {
  let options: ReturnType<typeof parseOptions>;
  try {
    options = parseOptions(argv);
  } catch (error) {
    process.stderr.write(`${describe(error)}\n`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  // Libraries that log with console.log must not corrupt the JSON stream.
  console.log = console.error;
  console.info = console.error;

  let cluster: DemoCluster | undefined;
  const stop = (signal: NodeJS.Signals) => {
    process.stderr.write(`\n${signal}: stopping the cluster...\n`);
    void (cluster?.close() ?? Promise.resolve()).finally(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // The reader of stdout went away (`pnpm -s demo --json | head -3`): finish the run under way,
  // stop the cluster and end with 0, as a command ended by SIGPIPE would end its pipeline,
  // instead of crashing on EPIPE and leaving the database servers running.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    stdoutClosed = true;
  });

  const started = performance.now();
  try {
    await runDemo(options, {
      out: (line) => {
        if (!stdoutClosed) process.stdout.write(`${line}\n`);
      },
      log: (line) => process.stderr.write(`${line}\n`),
      onCluster: (c) => {
        cluster = c;
      },
      stopped: () => stdoutClosed,
    });
  } catch (error) {
    process.stderr.write(`${describe(error)}\n`);
    return 1;
  }
  if (stdoutClosed) {
    process.stderr.write('stdout was closed: stopped early\n');
    return 0;
  }
  process.stderr.write(`done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return 0;
}

function describe(error: unknown): string {
  if (error instanceof DemoError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return error.stack ?? error.message;
  return String(error);
}

const code = await main(process.argv.slice(2));
// Exit explicitly once stdout is flushed: a library timer left running after teardown (the
// harness's stop grace timer) would otherwise keep the process alive for seconds.
if (stdoutClosed) process.exit(code);
else process.stdout.write('', () => process.exit(code));
