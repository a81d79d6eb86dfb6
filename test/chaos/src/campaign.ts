// One campaign: a fresh cluster, the app, N sessions doing writes and reads, the fault
// scheduler, a quiet final round, then the checker over the whole history.
import { randomBytes } from 'node:crypto';
import { loadTarget, type Order, prepareCluster } from '@tidemark/conformance';
import type { ClusterCapability } from '@tidemark/test-clusters';
import {
  App,
  type AppStats,
  type ControlMode,
  type SettleMode,
  type TokenMode,
  type WriteMode,
  withTimeout,
} from './app.js';
import { type CheckResult, checkHistory } from './checker.js';
import { type FaultCounts, type FaultKind, FaultScheduler, short, sleep } from './faults.js';
import type { Failover, History, Operation } from './history.js';
import { Prng } from './prng.js';
import { absentIds } from './verify.js';

/** Targets whose clusters the scheduler can drive (SQL workloads, local harness clusters). */
export const CHAOS_TARGETS = ['pg15', 'pg18', 'pg19', 'mysql97', 'mariadb1011'] as const;

export interface CampaignOptions {
  readonly target: string;
  /** How long sessions and faults run, in seconds (cluster start-up and the check excluded). */
  readonly durationSec: number;
  readonly seed: number;
  readonly control: ControlMode;
  /** How tokens leave a request (default `settle`). */
  readonly tokens?: TokenMode;
  /** How the app writes (default `transaction`). */
  readonly writes?: WriteMode;
  /** When the router settles a replica read's position (default `deferred`). */
  readonly settle?: SettleMode;
  /** App sessions (default 8). */
  readonly sessions?: number;
  /** Share of operations that are writes (default 0.35). */
  readonly writeRatio?: number;
  /** Restrict the fault kinds (default: all the cluster can stage). */
  readonly faults?: ReadonlySet<FaultKind> | undefined;
  readonly log?: (line: string) => void;
  /** Abort: loops stop early; the cluster is still healed, checked and torn down. */
  readonly signal?: AbortSignal;
}

export interface CampaignResult {
  readonly target: string;
  readonly version: string;
  readonly seed: number;
  readonly control: ControlMode;
  readonly tokens: TokenMode;
  readonly writes: WriteMode;
  readonly settle: SettleMode;
  readonly durationSec: number;
  readonly sessions: number;
  readonly capabilities: readonly ClusterCapability[];
  readonly history: History;
  readonly check: CheckResult;
  readonly faultCounts: Readonly<Record<FaultKind, FaultCounts>>;
  readonly faultNotes: Readonly<Record<string, number>>;
  readonly faults: number;
  readonly app: AppStats;
  /**
   * Errors nothing caught while the campaign ran: a database driver emitting 'error' on a
   * connection nobody listened on. In an application each one would have crashed the process.
   */
  readonly uncaught: readonly string[];
  /** Set when the campaign could not finish its own checks (the result is then a failure). */
  readonly incomplete?: string;
}

/** Longest a single operation may take before the session moves on (recorded as timeout). */
const OP_TIMEOUT_MS = 20_000;

interface SessionState {
  readonly id: number;
  readonly customer: number;
  readonly prng: Prng;
  token: string | undefined;
  next: number;
}

export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const log = options.log ?? (() => undefined);
  const sessionsWanted = options.sessions ?? 8;
  const writeRatio = options.writeRatio ?? 0.35;
  // The campaign stops early on the caller's signal, or on an uncaught error it cannot excuse.
  const stop = new AbortController();
  const signal = stop.signal;
  options.signal?.addEventListener('abort', () => stop.abort(), { once: true });
  if (options.signal?.aborted) stop.abort();
  if (!(CHAOS_TARGETS as readonly string[]).includes(options.target)) {
    throw new Error(`unknown chaos target ${options.target} (known: ${CHAOS_TARGETS.join(', ')})`);
  }
  const root = new Prng(options.seed);
  const schedulerPrng = root.fork('scheduler');
  const sessions: SessionState[] = Array.from({ length: sessionsWanted }, (_, i) => ({
    id: i + 1,
    customer: i + 1,
    prng: root.fork(`session-${i + 1}`),
    token: undefined,
    next: 0,
  }));

  const target = await loadTarget(options.target);
  const cluster = await prepareCluster(target);
  const tokenMode = options.tokens ?? 'settle';
  const writeMode = options.writes ?? 'transaction';
  const settleMode = options.settle ?? 'deferred';
  const app = new App(
    target,
    cluster,
    options.control,
    { settle: settleMode },
    randomBytes(32).toString('hex'),
    tokenMode,
    writeMode,
  );
  const operations: Operation[] = [];
  const failovers: Failover[] = [];
  const finished: number[] = [];
  let nextId = 1;
  let t0 = performance.now();
  const now = () => performance.now() - t0;
  const stamp = (line: string) => log(`[${(now() / 1000).toFixed(1).padStart(6)}s] ${line}`);

  // A driver error emitted on a connection with no listener would end the process (and leave
  // the cluster running). Record it: it is a finding (the app would have crashed). Anything
  // else uncaught stops the campaign, which still heals, checks and tears down.
  const uncaught: string[] = [];
  let fatal: string | undefined;
  const onUncaught = (error: unknown) => {
    const text = `${errorName(error)}: ${short(error)}`;
    if (isDriverError(error)) {
      uncaught.push(text);
      stamp(`UNCAUGHT driver error (an app would have crashed): ${text}`);
      return;
    }
    fatal ??= text;
    stamp(`UNCAUGHT error, stopping the campaign: ${text}`);
    stop.abort();
  };
  process.on('uncaughtException', onUncaught);

  try {
    await app.reconfigure();
    const scheduler = new FaultScheduler({
      cluster,
      app,
      prng: schedulerPrng,
      now,
      log: stamp,
      finishedWrites: () => [...finished],
      onFailover: (failover) => failovers.push(failover),
      kinds: options.faults,
      signal,
    });
    log(
      `campaign: target=${options.target} (${cluster.version}) control=${options.control} tokens=${tokenMode} writes=${writeMode} settle=${settleMode} seed=${options.seed} duration=${options.durationSec}s sessions=${sessionsWanted} capabilities=${[...scheduler.capabilities].join(',')}`,
    );

    const runOp = async (session: SessionState, kind: 'write' | 'read'): Promise<void> => {
      const index = session.next++;
      const start = now();
      const tokenBefore = session.token;
      const generation = app.generation;
      const order: Order | undefined =
        kind === 'write'
          ? { id: nextId++, customer: session.customer, note: `s${session.id}#${index}` }
          : undefined;
      const pending =
        order !== undefined
          ? app.write(tokenBefore, order)
          : app.read(tokenBefore, session.customer);
      let outcome: Awaited<typeof pending> | undefined;
      try {
        outcome = await withTimeout(pending, OP_TIMEOUT_MS);
      } catch {
        outcome = undefined;
      }
      const end = now();
      if (order && outcome) finished.push(order.id);
      if (outcome) session.token = outcome.tokenAfter;
      operations.push({
        session: session.id,
        index,
        kind,
        start,
        end,
        generation,
        ...(order ? { writeId: order.id } : {}),
        ...(outcome?.rows ? { rows: outcome.rows } : {}),
        ok: outcome?.ok ?? false,
        ...(outcome === undefined
          ? { errorClass: 'timeout' as const, errorCode: 'OPERATION_TIMEOUT' }
          : {}),
        ...(outcome?.errorClass ? { errorClass: outcome.errorClass } : {}),
        ...(outcome?.errorCode ? { errorCode: outcome.errorCode } : {}),
        ...(outcome?.errorMessage ? { errorMessage: outcome.errorMessage } : {}),
        ...(outcome?.lostReport ? { lostReport: outcome.lostReport } : {}),
        ...(outcome?.lostVerdict ? { lostVerdict: outcome.lostVerdict } : {}),
        ...(outcome?.target ? { target: outcome.target } : {}),
        ...(outcome?.reason ? { reason: outcome.reason } : {}),
        tokenBefore,
        tokenAfter: session.token,
        positionBefore: app.positionOf(tokenBefore),
        positionAfter: app.positionOf(session.token),
      });
    };

    const stopAt = options.durationSec * 1000;
    t0 = performance.now();
    const loops = sessions.map(async (session) => {
      while (now() < stopAt && !signal.aborted) {
        await runOp(session, session.prng.chance(writeRatio) ? 'write' : 'read');
        await sleep(session.prng.between(10, 60), signal);
      }
    });
    await scheduler.run(stopAt);
    await Promise.all(loops);

    // A quiet final round: every session reads, writes and reads once more on a healed
    // cluster, so a loss it was not yet told about has its chance to be reported.
    if (!signal.aborted) {
      await sleep(1500, signal);
      stamp('final round: every session reads, writes, reads');
      await Promise.all(
        sessions.map(async (session) => {
          await runOp(session, 'read');
          await runOp(session, 'write');
          await runOp(session, 'read');
        }),
      );
    }

    let finalAbsent: number[] = [];
    let incomplete: string | undefined = fatal && `uncaught error: ${fatal}`;
    try {
      const primary = cluster.primary();
      if (!primary.running) throw new Error(`the primary ${primary.name} is not running`);
      finalAbsent = await absentIds(cluster, primary.name, finished);
    } catch (error) {
      const why = `final check on the primary failed: ${short(error)}`;
      incomplete = incomplete ? `${incomplete}; ${why}` : why;
      stamp(why);
    }
    const history: History = { operations, failovers, finalAbsent };
    const check = checkHistory(history);
    return {
      target: options.target,
      version: cluster.version,
      seed: options.seed,
      control: options.control,
      tokens: tokenMode,
      writes: writeMode,
      settle: settleMode,
      durationSec: options.durationSec,
      sessions: sessionsWanted,
      capabilities: [...scheduler.capabilities],
      history,
      check,
      faultCounts: scheduler.counts,
      faultNotes: scheduler.notes,
      faults: scheduler.totalInjected,
      app: app.stats,
      uncaught,
      ...(incomplete ? { incomplete } : {}),
    };
  } finally {
    await app.close().catch(() => undefined);
    await cluster.teardown();
    process.off('uncaughtException', onUncaught);
  }
}

/** An error a database driver raised about a connection (it carries a server or socket code). */
function isDriverError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError) {
    return false;
  }
  const { code, severity, errno } = error as {
    code?: unknown;
    severity?: unknown;
    errno?: unknown;
  };
  return typeof severity === 'string' || typeof code === 'string' || typeof errno === 'number';
}

function errorName(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${error.name} ${code}` : error.name;
  }
  return typeof error;
}
