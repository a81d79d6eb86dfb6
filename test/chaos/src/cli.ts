// pnpm test:chaos [-- --target pg18 --duration 60 --seed N --control naive ...]
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ControlMode, SettleMode, TokenMode, WriteMode } from './app.js';
import { CHAOS_TARGETS, runCampaign } from './campaign.js';
import { checkHistory } from './checker.js';
import { FAULT_KINDS, type FaultKind } from './faults.js';
import type { Failover, Operation } from './history.js';
import { parseSeed } from './prng.js';
import { failed, formatCheck, formatReport } from './report.js';

const USAGE = `usage: pnpm test:chaos -- [options]
  --target NAME      ${CHAOS_TARGETS.join(' | ')} (default pg18)
  --duration SEC     how long sessions and faults run (default 60)
  --seed N           seed of the fault plan (default: TIDEMARK_CHAOS_SEED, else random; printed)
  --control MODE     tidemark (default) | naive: reads to any replica without tokens (must fail)
  --tokens MODE      settle (default): a request settles every pending position before its token
                     goes out | carry: replica reads travel in the token (carryPending)
  --writes MODE      transaction (default): the router's managed transaction | autocommit:
                     transaction: false, as pool.query('INSERT ...')
  --settle MODE      deferred (default): a replica read's position is settled later, by a shared
                     probe | immediate: before the read returns (on PostgreSQL, from the read's
                     own round trip)
  --sessions N       app sessions (default 8)
  --faults LIST      comma-separated subset of: ${FAULT_KINDS.join(', ')}
  --history FILE     write every operation and failover as JSON lines to FILE
  --check FILE       run only the checker over a history FILE written by --history
Exit status 1 when anomalies > 0, lost_writes_reported != lost_writes_staged, a driver error
went uncaught (it would have crashed an app), or the check could not finish; 2 on a usage or
start-up error.`;

async function main(): Promise<number> {
  // pnpm passes a literal `--` through when the caller separates script arguments with it.
  const args = process.argv.slice(2).filter((arg) => arg !== '--');
  let values: ReturnType<typeof parse>;
  try {
    values = parse(args);
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.check !== undefined) return recheck(values.check);
  const target = values.target ?? 'pg18';
  const durationSec = Number(values.duration ?? '60');
  const control = (values.control ?? 'tidemark') as ControlMode;
  const sessions = Number(values.sessions ?? '8');
  const tokens = (values.tokens ?? 'settle') as TokenMode;
  const writes = (values.writes ?? 'transaction') as WriteMode;
  const settle = (values.settle ?? 'deferred') as SettleMode;
  const problems: string[] = [];
  if (!(CHAOS_TARGETS as readonly string[]).includes(target)) {
    problems.push(`unknown --target ${target}`);
  }
  if (!(Number.isFinite(durationSec) && durationSec > 0)) {
    problems.push(`--duration must be > 0 seconds`);
  }
  if (control !== 'tidemark' && control !== 'naive') problems.push(`unknown --control ${control}`);
  if (tokens !== 'settle' && tokens !== 'carry') problems.push(`unknown --tokens ${tokens}`);
  if (writes !== 'transaction' && writes !== 'autocommit') {
    problems.push(`unknown --writes ${writes}`);
  }
  if (settle !== 'deferred' && settle !== 'immediate') {
    problems.push(`unknown --settle ${settle}`);
  }
  if (!(Number.isInteger(sessions) && sessions >= 1 && sessions <= 64)) {
    problems.push('--sessions must be 1..64');
  }
  let faults: Set<FaultKind> | undefined;
  if (values.faults !== undefined) {
    const names = values.faults.split(',').map((name) => name.trim());
    const unknown = names.filter((name) => !(FAULT_KINDS as readonly string[]).includes(name));
    if (unknown.length > 0) problems.push(`unknown fault kind(s): ${unknown.join(', ')}`);
    faults = new Set(names as FaultKind[]);
  }
  if (problems.length > 0) {
    console.error(`${problems.join('\n')}\n${USAGE}`);
    return 2;
  }
  const seed = parseSeed(values.seed ?? process.env['TIDEMARK_CHAOS_SEED']);
  console.log(
    `campaign: seed ${seed} (replay the same fault plan with --seed ${seed} or TIDEMARK_CHAOS_SEED=${seed})`,
  );

  // First Ctrl-C: stop the loops, heal, check and tear down. Second: exit now (the harness's
  // exit handler still stops every server it started).
  const abort = new AbortController();
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts++;
    if (interrupts === 1) {
      console.log(`campaign: ${signal}: stopping early, healing, checking, tearing down`);
      abort.abort();
    } else {
      process.exit(130);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A bound on everything: start-up, the run, the final round, the check and the teardown.
  const watchdog = setTimeout(
    () => {
      console.error('campaign: watchdog: still running long after --duration; exiting');
      process.exit(3);
    },
    (durationSec + 900) * 1000,
  );
  watchdog.unref();

  let result: Awaited<ReturnType<typeof runCampaign>>;
  try {
    result = await runCampaign({
      target,
      durationSec,
      seed,
      control,
      tokens,
      writes,
      settle,
      sessions,
      faults,
      log: (line) => console.log(line),
      signal: abort.signal,
    });
  } catch (error) {
    console.error(`campaign failed: ${(error as Error).stack ?? String(error)}`);
    return 2;
  } finally {
    clearTimeout(watchdog);
  }
  if (values.history) {
    const meta = {
      type: 'meta',
      target: result.target,
      version: result.version,
      seed: result.seed,
      control: result.control,
      tokens: result.tokens,
      writes: result.writes,
      settle: result.settle,
      durationSec: result.durationSec,
      faults: result.faults,
    };
    const lines = [
      JSON.stringify(meta),
      ...result.history.failovers.map((f) => JSON.stringify({ type: 'failover', ...f })),
      ...result.history.operations.map((op) => JSON.stringify({ type: 'operation', ...op })),
      JSON.stringify({ type: 'final', absent: result.history.finalAbsent }),
    ];
    writeFileSync(values.history, `${lines.join('\n')}\n`);
    console.log(`campaign: history written to ${values.history}`);
  }
  for (const line of formatReport(result)) console.log(line);
  return failed(result) ? 1 : 0;
}

/** The checker alone, over a history written by --history (same checks, same closing line). */
function recheck(file: string): number {
  const operations: Operation[] = [];
  const failovers: Failover[] = [];
  let finalAbsent: number[] = [];
  let faults = 0;
  let meta = '';
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const { type, ...record } = JSON.parse(line) as { type: string } & Record<string, unknown>;
    if (type === 'operation') operations.push(record as unknown as Operation);
    else if (type === 'failover') failovers.push(record as unknown as Failover);
    else if (type === 'final') finalAbsent = record['absent'] as number[];
    else if (type === 'meta') {
      faults = Number(record['faults'] ?? 0);
      meta = `target=${String(record['target'])} seed=${String(record['seed'])} control=${String(record['control'])} tokens=${String(record['tokens'] ?? 'settle')} writes=${String(record['writes'] ?? 'transaction')} settle=${String(record['settle'] ?? 'deferred')} duration=${String(record['durationSec'])}s`;
    }
  }
  const check = checkHistory({ operations, failovers, finalAbsent });
  console.log(`recheck: ${file}${meta ? ` (${meta})` : ''}`);
  for (const line of formatCheck(check)) console.log(line);
  console.log(
    `chaos: operations=${operations.length} faults=${faults} anomalies=${check.anomalies} lost_writes_staged=${check.lostWritesStaged} lost_writes_reported=${check.lostWritesReported}`,
  );
  return check.anomalies > 0 || check.lostWritesReported !== check.lostWritesStaged ? 1 : 0;
}

function parse(args: string[]) {
  return parseArgs({
    args,
    options: {
      target: { type: 'string' },
      duration: { type: 'string' },
      seed: { type: 'string' },
      control: { type: 'string' },
      tokens: { type: 'string' },
      writes: { type: 'string' },
      settle: { type: 'string' },
      sessions: { type: 'string' },
      faults: { type: 'string' },
      history: { type: 'string' },
      check: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
    strict: true,
  }).values;
}

main().then(
  (code) => {
    process.exitCode = code;
    // Pools and timers are closed by now; should anything still hold the loop, leave anyway.
    setTimeout(() => process.exit(code), 5000).unref();
  },
  (error) => {
    console.error(error);
    process.exitCode = 2;
  },
);
