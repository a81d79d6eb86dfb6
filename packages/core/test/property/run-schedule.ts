/**
 * Runs one {@link Schedule} on the replication simulator through a read path (the real core
 * Router, or the naive control) and checks every read against what the session had done before:
 *
 * - read-your-writes: the read shows every write the session had acknowledged before it began;
 * - monotonic reads: the read shows a state no older than any the session saw before;
 * - fallback cap: primary reads, over every window of virtual time, stay under the token bucket.
 *
 * The checks look at the simulator's ground truth (what the node had applied when the query ran),
 * never at the router's own bookkeeping.
 */
import {
  balanced,
  ErrorCode,
  type Lease,
  PRIMARY,
  Router,
  type RouterOptions,
  randomChoice,
  type SelectionPolicy,
  Session,
  TidemarkError,
  TokenCodec,
} from '../../src/index.js';
import type { CounterPosition } from '../support/counter-codec.js';
import {
  ReplicationSimulator,
  type SimConnection,
  SimulatedAdapter,
  SimulatedPollingMonitor,
} from '../support/simulator.js';
import { type ClusterEvent, type RouterSettings, type Schedule, seededRandom } from './schedule.js';

export type ViolationKind =
  | 'read-your-writes'
  | 'monotonic-reads'
  | 'fallback-cap'
  | 'stale-not-allowed'
  | 'unexpected-error';

export interface Violation {
  readonly kind: ViolationKind;
  readonly detail: string;
}

export interface ScheduleResult {
  readonly reads: number;
  /** Reads the router marked stale (degraded 'stale'); exempt from the checks. */
  readonly staleReads: number;
  /** Stale-marked reads that did miss a write or go back in time: flagged, so allowed. */
  readonly staleAnomalies: number;
  readonly primaryReads: number;
  /** Failed reads by error code (ReplicasBehind, ReadFailed, ...). */
  readonly errors: Readonly<Record<string, number>>;
  readonly reasons: Readonly<Record<string, number>>;
  readonly violations: readonly Violation[];
  readonly virtualMs: number;
}

/** What a read callback reports: the node's state as the query saw it. */
interface Observation {
  readonly node: string;
  readonly seq: number;
  readonly missing: readonly string[];
}

interface RoutedObservation {
  readonly value: Observation;
  readonly stale: boolean;
  readonly reason: string;
}

/** The thing under test: where reads and writes go. */
interface ReadPath {
  /** Probe the cluster once before traffic. */
  ready(): Promise<void>;
  write(session: Session, fn: (c: SimConnection) => Promise<void>): Promise<void>;
  read(
    session: Session,
    fn: (c: SimConnection) => Promise<Observation>,
    affinityKey: string,
  ): Promise<RoutedObservation>;
  /** Classify a failed read: allowed (returns its code) or a violation (returns undefined). */
  allowedError(error: unknown): string | undefined;
  close(): Promise<void>;
}

/** `lease`: the router too, every read and write through `router.acquire` and `release`. */
export type ReadPathKind = 'router' | 'lease' | 'naive';

export interface RunOptions {
  /** Adapter returns `observed` with reads (the contract). Default true. */
  readonly reportObserved?: boolean;
  /**
   * When a read comes back without `observed`, probe the node after the read and report that
   * instead: the fix proposed for core's Router (see observed-position.test.ts).
   */
  readonly probeAfterRead?: boolean;
  /**
   * How token round trips treat reads whose positions are pending. `settle` (default): settle,
   * then encode, as the HTTP carriers do. `carry`: settle writes only and carry the reads in the
   * token (`toTokenData({ carryPending: true })`). `drop`: a broken carrier that encodes only the
   * settled part (the control: monotonic reads must break).
   */
  readonly pendingReads?: 'settle' | 'carry' | 'drop';
  /** Adapter returns the position of writes the router runs uncaptured. Default true. */
  readonly captureWrites?: boolean;
}

const SIGNING_KEY = { id: 'k1', secret: 'property-test-secret-of-at-least-32-bytes' };

export async function runSchedule(
  schedule: Schedule,
  kind: ReadPathKind,
  options: RunOptions = {},
): Promise<ScheduleResult> {
  const random = seededRandom(schedule.seed);
  const simulator = new ReplicationSimulator({
    replicas: schedule.replicaLagsMs.map((lagMs, i) => ({ id: `r${i}`, lagMs })),
  });
  const adapter = new SimulatedAdapter(simulator, {
    serverSideWait: schedule.serverSideWait,
    readLatencyMs: () => Math.floor(random() * (schedule.maxReadLatencyMs + 1)),
    commitLatencyMs: () => Math.floor(random() * (schedule.maxCommitLatencyMs + 1)),
    reportObserved: options.reportObserved ?? true,
    captureWrites: options.captureWrites ?? true,
  });
  const routerAdapter = options.probeAfterRead ? probeAfterRead(adapter) : adapter;
  const path =
    kind === 'naive'
      ? naivePath(adapter, simulator.replicaIds)
      : routerPath(routerAdapter, schedule.router, random, kind === 'lease');
  const tokens = new TokenCodec({ keys: [SIGNING_KEY] });

  const violations: Violation[] = [];
  const errors: Record<string, number> = {};
  const reasons: Record<string, number> = {};
  let reads = 0;
  let staleReads = 0;
  let staleAnomalies = 0;

  async function runSession(index: number, steps: Schedule['sessions'][number]): Promise<void> {
    let session = new Session();
    const acknowledged: string[] = [];
    let newestSeen = 0;
    let writes = 0;
    for (const step of steps) {
      if (schedule.tokenRoundTrip) {
        const mode = options.pendingReads ?? 'settle';
        if (mode === 'carry') {
          // Writes and primary reads settle before the response; replica reads travel in the token.
          await session.settledForCarrying().catch(() => undefined);
          let data: ReturnType<Session['toTokenData']> | undefined;
          try {
            data = session.toTokenData({ carryPending: true });
          } catch {
            data = undefined; // a write still pending: keep the session (an error response)
          }
          if (data) session = Session.fromToken(tokens.decode(tokens.encode(data)));
        } else if (mode === 'drop') {
          session = Session.fromToken(tokens.decode(tokens.encode(session.settledTokenData())));
        } else {
          // As a carrier does: settle, then encode. A settle that fails keeps the session as it
          // is (the app would answer this request with an error and keep its old cookie).
          await session.settled().catch(() => undefined);
          if (!session.unsettled) {
            session = Session.fromToken(tokens.decode(tokens.encode(session.toTokenData())));
          }
        }
      }
      if (step.kind === 'think') {
        await simulator.clock.sleep(step.ms);
        continue;
      }
      if (step.kind === 'write') {
        const writeId = `s${index}w${writes++}`;
        try {
          await path.write(session, async (c) => c.insert(writeId));
          acknowledged.push(writeId);
        } catch (error) {
          violations.push({
            kind: 'unexpected-error',
            detail: `write ${writeId}: ${describe(error)}`,
          });
        }
        continue;
      }
      const mustSee = [...acknowledged];
      const at = simulator.clock.now();
      let routed: RoutedObservation;
      try {
        routed = await path.read(
          session,
          async (c) => ({
            node: c.node,
            seq: c.lastApplied(),
            missing: mustSee.filter((id) => !c.sees(id)),
          }),
          `session-${index}`,
        );
      } catch (error) {
        const code = path.allowedError(error);
        if (code === undefined) {
          violations.push({
            kind: 'unexpected-error',
            detail: `read at ${at} ms: ${describe(error)}`,
          });
        } else errors[code] = (errors[code] ?? 0) + 1;
        continue;
      }
      reads++;
      reasons[routed.reason] = (reasons[routed.reason] ?? 0) + 1;
      const { node, seq, missing } = routed.value;
      const where = `session ${index} read at ${at} ms on ${node} (reason ${routed.reason}) saw seq ${seq}`;
      const anomalies: Violation[] = [];
      if (missing.length > 0) {
        anomalies.push({
          kind: 'read-your-writes',
          detail: `${where} but misses its acknowledged writes ${missing.join(',')}`,
        });
      }
      if (seq < newestSeen) {
        anomalies.push({
          kind: 'monotonic-reads',
          detail: `${where}, older than seq ${newestSeen} it saw before`,
        });
      }
      if (routed.stale) {
        staleReads++;
        if (schedule.router.degraded !== 'stale' || kind === 'naive') {
          violations.push({ kind: 'stale-not-allowed', detail: `${where}: stale under 'error'` });
        }
        if (anomalies.length > 0) staleAnomalies++;
      } else violations.push(...anomalies);
      newestSeen = Math.max(newestSeen, seq);
    }
  }

  async function runEvents(events: readonly ClusterEvent[]): Promise<void> {
    const timeline = events.flatMap((event) => expand(event, simulator.replicaIds));
    timeline.sort((a, b) => a.atMs - b.atMs);
    for (const { atMs, apply } of timeline) {
      await simulator.clock.sleep(atMs - simulator.clock.now());
      apply(simulator);
    }
  }

  await simulator.run(async () => {
    await path.ready();
    await Promise.all([
      runEvents(schedule.events),
      ...schedule.sessions.map((steps, i) => runSession(i, steps)),
    ]);
    await path.close();
  });

  const virtualMs = simulator.clock.now();
  if (kind === 'router') {
    const cap = checkFallbackCap(adapter.stats.primaryReadStarts, schedule.router);
    if (cap) violations.push(cap);
  }
  return {
    reads,
    staleReads,
    staleAnomalies,
    primaryReads: adapter.stats.primaryReadStarts.length,
    errors,
    reasons,
    violations,
    virtualMs,
  };
}

/**
 * Token bucket bound over every window [t_i, t_j] of primary reads: at most
 * `burst + ratePerSecond * (t_j - t_i)` reads (none at all with fallback disabled).
 */
export function checkFallbackCap(
  starts: readonly number[],
  settings: Pick<RouterSettings, 'fallbackEnabled' | 'burst' | 'ratePerSecond'>,
): Violation | undefined {
  if (!settings.fallbackEnabled) {
    return starts.length === 0
      ? undefined
      : {
          kind: 'fallback-cap',
          detail: `${starts.length} primary reads with fallback disabled`,
        };
  }
  for (let i = 0; i < starts.length; i++) {
    for (let j = i; j < starts.length; j++) {
      const count = j - i + 1;
      const allowed = settings.burst + (settings.ratePerSecond * (starts[j]! - starts[i]!)) / 1000;
      if (count > allowed + 1e-9) {
        return {
          kind: 'fallback-cap',
          detail: `${count} primary reads in [${starts[i]}, ${starts[j]}] ms, cap allows ${allowed.toFixed(3)} (burst ${settings.burst}, rate ${settings.ratePerSecond}/s)`,
        };
      }
    }
  }
  return undefined;
}

function expand(
  event: ClusterEvent,
  ids: readonly string[],
): Array<{ atMs: number; apply: (s: ReplicationSimulator) => void }> {
  const id = ids[event.replica % ids.length]!;
  switch (event.kind) {
    case 'lag':
      return [{ atMs: event.atMs, apply: (s) => s.setLag(id, event.lagMs) }];
    case 'pause':
      return [
        { atMs: event.atMs, apply: (s) => s.pause(id, event.reported) },
        { atMs: event.atMs + event.forMs, apply: (s) => s.resume(id) },
      ];
    case 'crash':
      return [
        { atMs: event.atMs, apply: (s) => s.crash(id) },
        { atMs: event.atMs + event.forMs, apply: (s) => s.restart(id) },
      ];
  }
}

/**
 * Wraps an adapter whose reads omit `observed`: after such a read, probe the same node. Its
 * applied position only moves forward, so a probe sent after the read returns a position at least
 * as new as the state the read saw (invariant 3), unlike the monitor's sample from before it.
 */
function probeAfterRead(adapter: SimulatedAdapter): SimulatedAdapter {
  const wrapped = Object.create(adapter) as SimulatedAdapter;
  wrapped.read = async (target, fn, context) => {
    const outcome = await adapter.read(target, fn, context);
    if (outcome.observed !== undefined) return outcome;
    const signal = new AbortController().signal;
    const observed =
      target === PRIMARY
        ? await adapter.probePrimary({ signal })
        : (await adapter.probe(target, { signal, primary: undefined })).applied;
    return { value: outcome.value, observed };
  };
  return wrapped;
}

function routerPath(
  adapter: SimulatedAdapter,
  settings: RouterSettings,
  random: () => number,
  viaLeases: boolean,
): ReadPath {
  const selection: SelectionPolicy | RouterSettings['selection'] =
    settings.selection === 'random'
      ? randomChoice(random)
      : settings.selection === 'balanced'
        ? balanced({ random })
        : settings.selection;
  const clock = adapter.simulator.clock;
  const options: RouterOptions<CounterPosition, SimConnection> = {
    adapter,
    clock,
    monitor: SimulatedPollingMonitor.of(adapter, settings.monitorIntervalMs),
    monitorOptions: { intervalMs: settings.monitorIntervalMs },
    health: {
      maxLagSeconds: settings.maxLagSeconds,
      ...(settings.maxSampleAgeMs === undefined ? {} : { maxSampleAgeMs: settings.maxSampleAgeMs }),
    },
    selection,
    wait: { budgetMs: settings.waitBudgetMs, pollIntervalMs: settings.pollIntervalMs },
    fallback: {
      enabled: settings.fallbackEnabled,
      burst: settings.burst,
      ratePerSecond: settings.ratePerSecond,
    },
    degraded: settings.degraded,
  };
  const router = new Router(options);
  /** What a driver-side integration does: acquire, run, release with the outcome. */
  const leased = async <T>(lease: Lease<SimConnection>, fn: (c: SimConnection) => Promise<T>) => {
    let value: T;
    try {
      value = await fn(lease.connection);
    } catch (error) {
      await lease.release(error);
      throw error;
    }
    await lease.release();
    return value;
  };
  return {
    ready: () => router.ready(),
    write: viaLeases
      ? async (session, fn) => leased(await router.acquire(session, 'write'), fn)
      : (session, fn) => router.write(session, fn),
    async read(session, fn, affinityKey) {
      if (viaLeases) {
        const lease = await router.acquire(session, 'read', { affinityKey });
        const value = await leased(lease, fn);
        return { value, stale: lease.stale, reason: lease.reason };
      }
      const { value, decision } = await router.readDetailed(session, fn, { affinityKey });
      return { value, stale: decision.stale, reason: decision.reason };
    },
    allowedError(error) {
      // Degraded 'error' and a read that failed twice are honest failures, not wrong answers.
      if (error instanceof TidemarkError) {
        if (error.code === ErrorCode.ReplicasBehind || error.code === ErrorCode.ReadFailed) {
          return error.code;
        }
      }
      return undefined;
    },
    close: () => router.close(),
  };
}

/**
 * The CONTROL: what an application does without Tidemark. Writes go to the primary, reads go
 * round-robin to replicas (skipping ones that fail), and nobody looks at positions.
 */
function naivePath(adapter: SimulatedAdapter, replicas: readonly string[]): ReadPath {
  let next = 0;
  return {
    ready: async () => undefined,
    async write(_session, fn) {
      await adapter.write(fn, {});
    },
    async read(_session, fn) {
      let lastError: unknown;
      for (let attempt = 0; attempt < replicas.length; attempt++) {
        const target = replicas[next++ % replicas.length]!;
        try {
          const { value } = await adapter.read(target, fn, {});
          return { value, stale: false, reason: `naive-${target}` };
        } catch (error) {
          lastError = error;
        }
      }
      throw new NaiveUnavailableError(lastError);
    },
    allowedError: (error) =>
      error instanceof NaiveUnavailableError ? 'naive-all-down' : undefined,
    close: async () => undefined,
  };
}

class NaiveUnavailableError extends Error {
  constructor(cause: unknown) {
    super('every replica failed the read', { cause });
  }
}

function describe(error: unknown): string {
  if (error instanceof TidemarkError) return `${error.name} ${error.code}: ${error.message}`;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** Totals over many schedules, for the printed summary. */
export class RunTally {
  schedules = 0;
  reads = 0;
  staleReads = 0;
  staleAnomalies = 0;
  primaryReads = 0;
  violatingSchedules = 0;
  readonly errors: Record<string, number> = {};
  readonly reasons: Record<string, number> = {};
  readonly violations: Record<string, number> = {};

  add(result: ScheduleResult): void {
    this.schedules++;
    this.reads += result.reads;
    this.staleReads += result.staleReads;
    this.staleAnomalies += result.staleAnomalies;
    this.primaryReads += result.primaryReads;
    if (result.violations.length > 0) this.violatingSchedules++;
    for (const [k, v] of Object.entries(result.errors)) this.errors[k] = (this.errors[k] ?? 0) + v;
    for (const [k, v] of Object.entries(result.reasons))
      this.reasons[k] = (this.reasons[k] ?? 0) + v;
    for (const v of result.violations) this.violations[v.kind] = (this.violations[v.kind] ?? 0) + 1;
  }

  summary(label: string): string {
    return [
      `[simulator] ${label}: schedules=${this.schedules} reads_checked=${this.reads}`,
      `primary_reads=${this.primaryReads} stale_reads=${this.staleReads} (anomalous but flagged: ${this.staleAnomalies})`,
      `violating_schedules=${this.violatingSchedules}`,
      `violations=${JSON.stringify(this.violations)}`,
      `errors=${JSON.stringify(this.errors)}`,
      `reasons=${JSON.stringify(this.reasons)}`,
    ].join(' ');
  }
}
