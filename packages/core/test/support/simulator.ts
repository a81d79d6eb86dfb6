/**
 * A replication SIMULATOR for property tests: one primary log and N replicas that apply it in
 * order with changing lag, pauses, crashes and restarts, all on a virtual clock. Nothing here is a
 * database; it models what the router may assume about one, and no more:
 *
 * - the primary assigns sequence numbers at commit; a write's position is taken after the commit;
 * - a replica applies entries strictly in order and never past the primary's log, so a replica at
 *   sequence n shows exactly the entries 1..n;
 * - a replica's applied position never moves backwards, across crashes and restarts too (the
 *   applied state is durable, as a real replica's replay position is);
 * - a crashed replica fails reads, probes and waits until it restarts.
 *
 * Time only moves when {@link ReplicationSimulator.run} advances it, so a schedule that spans
 * seconds of virtual time runs in milliseconds and the same schedule always runs the same way.
 */

import {
  type Adapter,
  PollingMonitor,
  type PollingMonitorOptions,
  type ProbeContext,
  type ProbeResult,
  type ReadContext,
  type ReadOutcome,
  type WaitOutcome,
  type WriteOutcome,
} from '../../src/adapter-kit/index.js';
import { type Clock, PRIMARY, type WriteOptions } from '../../src/index.js';
import { type CounterPosition, counterCodec } from './counter-codec.js';

/** The one replication history the simulator writes (no failovers are simulated). */
export const SIMULATED_HISTORY = 1;

// ---------------------------------------------------------------------------------------------
// Virtual clock
// ---------------------------------------------------------------------------------------------

interface Sleeper {
  readonly at: number;
  readonly order: number;
  readonly wake: () => void;
  /** Woken or aborted: left in the heap, skipped when it reaches the top. */
  done: boolean;
}

/**
 * Core's {@link Clock} over virtual milliseconds. `sleep` parks the caller until the simulator
 * advances time past its deadline (or its signal aborts); `now` never moves on its own.
 */
export class VirtualClock implements Clock {
  private time = 0;
  private order = 0;
  /**
   * A binary min-heap on (at, order), so sleepers due at the same instant wake in the order they
   * slept. Aborted sleepers stay until they reach the top: removing each from the middle of a
   * sorted array cost O(n), about 15% of a long simulation with thousands of reads parked in
   * the router's fallback queue (bench/model).
   */
  private readonly sleepers: Sleeper[] = [];
  private live = 0;

  now(): number {
    return this.time;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const sleeper: Sleeper = {
        at: this.time + (Number.isFinite(ms) ? Math.max(0, ms) : 0),
        order: this.order++,
        wake: done,
        done: false,
      };
      heapPush(this.sleepers, sleeper);
      this.live++;
      signal?.addEventListener('abort', done, { once: true });
      const clock = this;
      function done() {
        if (sleeper.done) return;
        sleeper.done = true;
        clock.live--;
        signal?.removeEventListener('abort', done);
        resolve();
      }
    });
  }

  /** Deadline of the earliest sleeper, or undefined when nobody sleeps. */
  nextWakeAt(): number | undefined {
    this.dropDone();
    return this.sleepers[0]?.at;
  }

  /** Number of parked sleepers (diagnostics for stalled simulations). */
  get pending(): number {
    return this.live;
  }

  /** Move time forward; time never goes back. Does not wake anyone: see {@link wakeDue}. */
  advanceTo(time: number): void {
    if (time < this.time) throw new Error(`virtual time cannot go back (${time} < ${this.time})`);
    this.time = time;
  }

  /** Wake every sleeper whose deadline has passed, earliest first. */
  wakeDue(): void {
    while (this.sleepers.length > 0 && this.sleepers[0]!.at <= this.time) {
      heapPop(this.sleepers)!.wake();
    }
  }

  private dropDone(): void {
    while (this.sleepers.length > 0 && this.sleepers[0]!.done) heapPop(this.sleepers);
  }
}

function before(a: Sleeper, b: Sleeper): boolean {
  return a.at < b.at || (a.at === b.at && a.order < b.order);
}

function heapPush(heap: Sleeper[], sleeper: Sleeper): void {
  let index = heap.push(sleeper) - 1;
  while (index > 0) {
    const parent = (index - 1) >>> 1;
    if (!before(sleeper, heap[parent]!)) break;
    heap[index] = heap[parent]!;
    index = parent;
  }
  heap[index] = sleeper;
}

function heapPop(heap: Sleeper[]): Sleeper | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (top === undefined || last === undefined || heap.length === 0) return top;
  let index = 0;
  for (;;) {
    const left = 2 * index + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left;
    if (!before(heap[child]!, last)) break;
    heap[index] = heap[child]!;
    index = child;
  }
  heap[index] = last;
  return top;
}

/** One trip through the event loop: every promise continuation queued so far has run after it. */
function drainMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

// ---------------------------------------------------------------------------------------------
// Replication model
// ---------------------------------------------------------------------------------------------

/** Thrown by reads, probes and waits on a crashed replica. Retryable, like a lost connection. */
export class SimulatedCrashError extends Error {
  readonly node: string;
  constructor(node: string) {
    super(`simulated replica ${node} is down (crashed); it answers again after a restart`);
    this.name = 'SimulatedCrashError';
    this.node = node;
  }
}

/** Thrown when a write is attempted on a read-only connection (router reads run read-only). */
export class SimulatedReadOnlyError extends Error {
  constructor(node: string) {
    super(`cannot write on ${node}: the connection is read-only`);
    this.name = 'SimulatedReadOnlyError';
  }
}

interface LogEntry {
  readonly seq: number;
  readonly committedAt: number;
  readonly writeIds: readonly string[];
}

interface ReplicaNode {
  readonly id: string;
  applied: number;
  lagMs: number;
  paused: boolean;
  /** Whether probes report the pause (PostgreSQL replay pause does; a stuck applier may not). */
  pauseReported: boolean;
  crashed: boolean;
}

/** A read-only view of one replica, for assertions and diagnostics. */
export interface SimulatedReplicaView {
  readonly id: string;
  readonly applied: number;
  readonly lagMs: number;
  readonly paused: boolean;
  readonly crashed: boolean;
}

interface Waiter {
  readonly replica: string;
  readonly seq: number;
  readonly settle: (outcome: 'reached' | 'timeout' | Error) => void;
}

export interface ReplicationSimulatorOptions {
  /** Replica ids with their initial apply lag in virtual ms (default 0). */
  readonly replicas: ReadonlyArray<{ readonly id: string; readonly lagMs?: number }>;
  /** Abort a run whose virtual time passes this (a schedule that never ends). Default 10 min. */
  readonly maxVirtualMs?: number;
}

/**
 * The primary log and its replicas. Drive it with {@link ReplicationSimulator.run}; talk to it
 * through a {@link SimulatedAdapter}; change it with the fault methods (`setLag`, `pause`,
 * `crash`, ...) from inside a run.
 */
export class ReplicationSimulator {
  readonly clock = new VirtualClock();
  private readonly log: LogEntry[] = [];
  private readonly seqByWriteId = new Map<string, number>();
  private readonly nodes = new Map<string, ReplicaNode>();
  private readonly waiters = new Set<Waiter>();
  private readonly maxVirtualMs: number;

  constructor(options: ReplicationSimulatorOptions) {
    for (const { id, lagMs = 0 } of options.replicas) {
      if (id === PRIMARY || this.nodes.has(id)) throw new Error(`bad replica id ${id}`);
      this.nodes.set(id, {
        id,
        applied: 0,
        lagMs: checkLag(lagMs),
        paused: false,
        pauseReported: true,
        crashed: false,
      });
    }
    this.maxVirtualMs = options.maxVirtualMs ?? 600_000;
  }

  /** Replica ids in configuration order. */
  get replicaIds(): string[] {
    return [...this.nodes.keys()];
  }

  /** Highest committed sequence number on the primary (0 before the first write). */
  primarySeq(): number {
    return this.log.length;
  }

  /** Position of sequence number `seq` in the simulated history. */
  position(seq: number): CounterPosition {
    return { history: SIMULATED_HISTORY, seq };
  }

  replica(id: string): SimulatedReplicaView {
    const node = this.node(id);
    return {
      id: node.id,
      applied: node.applied,
      lagMs: node.lagMs,
      paused: node.paused,
      crashed: node.crashed,
    };
  }

  /** Highest sequence number visible on `node` (`primary` or a replica id). */
  appliedOn(node: string): number {
    this.applyDue();
    return node === PRIMARY ? this.log.length : this.node(node).applied;
  }

  /** Sequence number the write labelled `writeId` committed at, if it committed. */
  seqOfWrite(writeId: string): number | undefined {
    return this.seqByWriteId.get(writeId);
  }

  /** Whether `node` shows the write labelled `writeId`. */
  shows(node: string, writeId: string): boolean {
    const seq = this.seqByWriteId.get(writeId);
    return seq !== undefined && seq <= this.appliedOn(node);
  }

  /** Commit one transaction on the primary; returns its sequence number. */
  commit(writeIds: readonly string[]): number {
    const seq = this.log.length + 1;
    this.log.push({ seq, committedAt: this.clock.now(), writeIds: [...writeIds] });
    for (const id of writeIds) this.seqByWriteId.set(id, seq);
    return seq;
  }

  /** Seconds the replica's visible state trails the primary: age of its oldest unapplied entry. */
  lagSeconds(id: string): number {
    this.applyDue();
    const next = this.log[this.node(id).applied];
    return next === undefined ? 0 : Math.max(0, this.clock.now() - next.committedAt) / 1000;
  }

  // -- faults ----------------------------------------------------------------------------------

  setLag(id: string, lagMs: number): void {
    this.applyDue();
    this.node(id).lagMs = checkLag(lagMs);
    this.applyDue();
  }

  /** Stop applying. `reported` false models a stuck applier that probes do not reveal. */
  pause(id: string, reported = true): void {
    this.applyDue();
    const node = this.node(id);
    node.paused = true;
    node.pauseReported = reported;
  }

  resume(id: string): void {
    const node = this.node(id);
    node.paused = false;
    this.applyDue();
  }

  /** The replica goes down: reads, probes and waits fail; pending waits are cut off. */
  crash(id: string): void {
    this.applyDue();
    const node = this.node(id);
    node.crashed = true;
    for (const waiter of this.waiters) {
      if (waiter.replica === id) waiter.settle(new SimulatedCrashError(id));
    }
  }

  /** The replica comes back with the state it had applied, and catches up from there. */
  restart(id: string): void {
    this.node(id).crashed = false;
    this.applyDue();
  }

  // -- waits -----------------------------------------------------------------------------------

  /**
   * Resolve when replica `id` has applied `seq` ('reached') or after `timeoutMs` ('timeout');
   * reject with {@link SimulatedCrashError} if the replica is or goes down.
   */
  waitUntilApplied(
    id: string,
    seq: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<'reached' | 'timeout'> {
    this.applyDue();
    const node = this.node(id);
    if (node.crashed) return Promise.reject(new SimulatedCrashError(id));
    if (node.applied >= seq) return Promise.resolve('reached');
    if (signal?.aborted) return Promise.resolve('timeout');
    return new Promise((resolve, reject) => {
      const timer = new AbortController();
      const onAbort = () => waiter.settle('timeout');
      const waiter: Waiter = {
        replica: id,
        seq,
        settle: (outcome) => {
          if (!this.waiters.delete(waiter)) return;
          timer.abort();
          signal?.removeEventListener('abort', onAbort);
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        },
      };
      this.waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      void this.clock.sleep(timeoutMs, timer.signal).then(() => {
        waiter.settle(node.applied >= seq ? 'reached' : 'timeout');
      });
    });
  }

  // -- driving ---------------------------------------------------------------------------------

  /**
   * Run `main` to completion, advancing virtual time whenever every task is parked (sleeping or
   * waiting for a replica). Replicas apply what is due before sleepers due at the same instant
   * wake, so a sleeper sees the cluster as it is at its wake-up time.
   */
  async run<T>(main: () => Promise<T>): Promise<T> {
    let settled = false;
    const result = main().finally(() => {
      settled = true;
    });
    // The loop below observes settlement itself; this only keeps Node from reporting it early.
    result.catch(() => undefined);
    while (!settled) {
      await drainMicrotasks();
      if (settled) break;
      const next = minDefined(this.clock.nextWakeAt(), this.nextApplyAt());
      if (next === undefined || !Number.isFinite(next)) {
        throw new Error(
          `simulation stalled at ${this.clock.now()} ms: tasks are waiting but no timer or replica apply is pending (${this.clock.pending} sleepers)`,
        );
      }
      if (next > this.maxVirtualMs) {
        throw new Error(`simulation passed its limit of ${this.maxVirtualMs} virtual ms`);
      }
      this.clock.advanceTo(next);
      this.applyDue();
      this.clock.wakeDue();
    }
    return result;
  }

  /** Apply, on every running replica, each entry whose commit is at least its lag in the past. */
  applyDue(): void {
    const now = this.clock.now();
    for (const node of this.nodes.values()) {
      if (node.paused || node.crashed) continue;
      const before = node.applied;
      while (
        node.applied < this.log.length &&
        this.log[node.applied]!.committedAt + node.lagMs <= now
      ) {
        node.applied++;
      }
      if (node.applied !== before) this.wakeWaiters(node);
    }
  }

  /** Earliest virtual time at which some replica applies its next entry. */
  private nextApplyAt(): number | undefined {
    let next: number | undefined;
    for (const node of this.nodes.values()) {
      if (node.paused || node.crashed) continue;
      const entry = this.log[node.applied];
      if (entry === undefined) continue;
      const at = Math.max(this.clock.now(), entry.committedAt + node.lagMs);
      next = minDefined(next, at);
    }
    return next;
  }

  private wakeWaiters(node: ReplicaNode): void {
    for (const waiter of this.waiters) {
      if (waiter.replica === node.id && node.applied >= waiter.seq) waiter.settle('reached');
    }
  }

  private node(id: string): ReplicaNode {
    const node = this.nodes.get(id);
    if (!node) throw new Error(`unknown simulated replica ${id}`);
    return node;
  }

  /** Internal to {@link SimulatedAdapter}: the pause flag a probe reports. */
  probeView(id: string): { applied: number; paused: boolean; crashed: boolean } {
    this.applyDue();
    const node = this.node(id);
    return {
      applied: node.applied,
      paused: node.paused && node.pauseReported,
      crashed: node.crashed,
    };
  }
}

function checkLag(lagMs: number): number {
  if (!(Number.isFinite(lagMs) && lagMs >= 0)) throw new Error(`bad simulated lag ${lagMs}`);
  return lagMs;
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

// ---------------------------------------------------------------------------------------------
// Adapter
// ---------------------------------------------------------------------------------------------

/** What read and write callbacks receive: a handle on one simulated node. */
export interface SimConnection {
  /** `primary` or a replica id. */
  readonly node: string;
  readonly readOnly: boolean;
  /** Highest sequence number visible here; every entry up to it is visible (in-order apply). */
  lastApplied(): number;
  /** Whether the write labelled `writeId` is visible here. */
  sees(writeId: string): boolean;
  /** Label this transaction's log entry so readers can look for it. Read-only: throws. */
  insert(writeId: string): void;
}

/** A latency in virtual ms: fixed, or drawn per call (from a seeded generator, for replays). */
export type SimulatedLatency = number | (() => number);

export interface SimulatedAdapterOptions {
  /** Offer a server-side `waitFor` (like WAIT FOR LSN). Without it the router polls probes. */
  readonly serverSideWait?: boolean;
  /** Virtual ms between a read's start and its query. Default 0. */
  readonly readLatencyMs?: SimulatedLatency;
  /** Virtual ms between a write's callback and its commit. Default 0. */
  readonly commitLatencyMs?: SimulatedLatency;
  /**
   * Return the node's applied position with each read, as the adapter contract asks
   * (invariant 3). False models an adapter that leaves `observed` out. Default true.
   */
  readonly reportObserved?: boolean;
  /**
   * Return the commit's position from writes the router runs with `capture: false`. False
   * models PostgreSQL autocommit, where capturing would cost a round trip: the router then
   * settles the write from a primary probe sent after it. Default true.
   */
  readonly captureWrites?: boolean;
}

/** Counters a test can check against the router's own story. */
export interface SimulatedAdapterStats {
  /** Virtual time of every read that started on the primary (each one took a fallback token). */
  readonly primaryReadStarts: number[];
  replicaReads: number;
  failedReads: number;
  writes: number;
  probes: number;
  waits: number;
}

/**
 * Core's {@link Adapter} over a {@link ReplicationSimulator}: positions are {@link CounterPosition}
 * (`1.seq`), connections are {@link SimConnection}s.
 */
export class SimulatedAdapter implements Adapter<CounterPosition, SimConnection> {
  readonly codec = counterCodec();
  readonly replicas: readonly string[];
  readonly stats: SimulatedAdapterStats = {
    primaryReadStarts: [],
    replicaReads: 0,
    failedReads: 0,
    writes: 0,
    probes: 0,
    waits: 0,
  };
  readonly waitFor?: (
    replicaId: string,
    position: CounterPosition,
    timeoutMs: number,
    context: { signal: AbortSignal },
  ) => Promise<WaitOutcome<CounterPosition>>;
  private readonly readLatency: () => number;
  private readonly commitLatency: () => number;
  private readonly reportObserved: boolean;
  private readonly captureWrites: boolean;

  constructor(
    readonly simulator: ReplicationSimulator,
    options: SimulatedAdapterOptions = {},
  ) {
    this.replicas = simulator.replicaIds;
    this.readLatency = latency(options.readLatencyMs);
    this.commitLatency = latency(options.commitLatencyMs);
    this.reportObserved = options.reportObserved ?? true;
    this.captureWrites = options.captureWrites ?? true;
    if (options.serverSideWait ?? true) {
      this.waitFor = (id, position, timeoutMs, context) =>
        this.serverSideWait(id, position, timeoutMs, context.signal);
    }
  }

  private get clock(): VirtualClock {
    return this.simulator.clock;
  }

  async read<T>(
    target: string,
    fn: (connection: SimConnection) => Promise<T>,
    context: ReadContext,
  ): Promise<ReadOutcome<T, CounterPosition>> {
    if (target === PRIMARY) this.stats.primaryReadStarts.push(this.clock.now());
    else this.stats.replicaReads++;
    try {
      await this.clock.sleep(this.readLatency(), context.signal);
      this.assertUp(target);
      const value = await fn(this.connection(target, true));
      // A replica that went down while the query ran loses the answer with the connection.
      this.assertUp(target);
      const observed = this.simulator.position(this.simulator.appliedOn(target));
      return this.reportObserved ? { value, observed } : { value };
    } catch (error) {
      this.stats.failedReads++;
      throw error;
    }
  }

  async write<T>(
    fn: (connection: SimConnection) => Promise<T>,
    options: WriteOptions,
  ): Promise<WriteOutcome<T, CounterPosition>> {
    const labels: string[] = [];
    const value = await fn(this.connection(PRIMARY, false, labels));
    await this.clock.sleep(this.commitLatency());
    // Invariant 1: the position is the commit's own, taken after the commit, nothing earlier.
    const seq = this.simulator.commit(labels);
    this.stats.writes++;
    if (options.capture === false && !this.captureWrites) return { value, position: undefined };
    return { value, position: this.simulator.position(seq) };
  }

  async probe(
    replicaId: string,
    _context: ProbeContext<CounterPosition>,
  ): Promise<ProbeResult<CounterPosition>> {
    this.stats.probes++;
    const view = this.simulator.probeView(replicaId);
    if (view.crashed) throw new SimulatedCrashError(replicaId);
    return {
      applied: this.simulator.position(view.applied),
      lagSeconds: this.simulator.lagSeconds(replicaId),
      paused: view.paused,
    };
  }

  async probePrimary(_context: { signal: AbortSignal }): Promise<CounterPosition> {
    return this.simulator.position(this.simulator.primarySeq());
  }

  async close(): Promise<void> {}

  private async serverSideWait(
    id: string,
    position: CounterPosition,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<WaitOutcome<CounterPosition>> {
    this.stats.waits++;
    if (position.history !== SIMULATED_HISTORY) return { outcome: 'other-history' };
    const outcome = await this.simulator.waitUntilApplied(id, position.seq, timeoutMs, signal);
    if (outcome === 'timeout') return { outcome };
    return { outcome, applied: this.simulator.position(this.simulator.appliedOn(id)) };
  }

  private assertUp(node: string): void {
    if (node !== PRIMARY && this.simulator.replica(node).crashed) {
      throw new SimulatedCrashError(node);
    }
  }

  /** `labels` collects the write ids of a writable connection's transaction. */
  private connection(node: string, readOnly: boolean, labels: string[] = []): SimConnection {
    const simulator = this.simulator;
    return {
      node,
      readOnly,
      lastApplied: () => simulator.appliedOn(node),
      sees: (writeId) => simulator.shows(node, writeId),
      insert: (writeId) => {
        if (readOnly) throw new SimulatedReadOnlyError(node);
        labels.push(writeId);
      },
    };
  }
}

function latency(value: SimulatedLatency | undefined): () => number {
  if (typeof value === 'function') return value;
  const fixed = value ?? 0;
  return () => fixed;
}

// ---------------------------------------------------------------------------------------------
// Monitor
// ---------------------------------------------------------------------------------------------

/**
 * Core's {@link PollingMonitor}, polling on the simulator's virtual clock instead of real timers:
 * every `intervalMs` of virtual time it probes all replicas and the primary. Everything else
 * (forward-only views, failure handling, health inputs) is the real monitor's code.
 */
export class SimulatedPollingMonitor<P> extends PollingMonitor<P> {
  private loop: AbortController | undefined;
  private readonly virtualClock: VirtualClock;
  private readonly pollEveryMs: number;

  constructor(options: PollingMonitorOptions<P> & { clock: VirtualClock }) {
    // Probes resolve in virtual time; the real monitor's probe timeout runs on real timers, so
    // keep it far out of reach of a slow test machine.
    super({ ...options, probeTimeoutMs: 3_600_000 });
    this.virtualClock = options.clock;
    this.pollEveryMs = options.intervalMs ?? 200;
  }

  /** The monitor of `adapter`'s simulated cluster, polling every `intervalMs` virtual ms. */
  static of(
    adapter: SimulatedAdapter,
    intervalMs: number,
  ): SimulatedPollingMonitor<CounterPosition> {
    return new SimulatedPollingMonitor<CounterPosition>({
      codec: adapter.codec,
      replicas: adapter.replicas,
      probe: (id, context) => adapter.probe(id, context),
      probePrimary: (context) => adapter.probePrimary(context),
      intervalMs,
      clock: adapter.simulator.clock,
    });
  }

  override start(): void {
    if (this.loop) return;
    const loop = new AbortController();
    this.loop = loop;
    void (async () => {
      while (!loop.signal.aborted) {
        await this.virtualClock.sleep(this.pollEveryMs, loop.signal);
        if (loop.signal.aborted) break;
        await Promise.all([this.refresh(), this.refreshPrimary().catch(() => undefined)]);
      }
    })();
  }

  override async close(): Promise<void> {
    this.loop?.abort();
    await super.close();
  }
}

/** A {@link SimulatedPollingMonitor} over the adapter's probes, on the simulator's clock. */
export function simulatedMonitor(
  adapter: SimulatedAdapter,
  intervalMs?: number,
): SimulatedPollingMonitor<CounterPosition> {
  return new SimulatedPollingMonitor<CounterPosition>({
    codec: adapter.codec,
    replicas: adapter.replicas,
    probe: (id, context) => adapter.probe(id, context),
    probePrimary: (context) => adapter.probePrimary(context),
    clock: adapter.simulator.clock,
    ...(intervalMs === undefined ? {} : { intervalMs }),
  });
}
