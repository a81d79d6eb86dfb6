import type {
  Adapter,
  PositionCodec,
  ProbeContext,
  ProbeResult,
  ReadContext,
  ReadOutcome,
  WaitOutcome,
  WriteOutcome,
} from '../../src/adapter-kit/index.js';
import { type Clock, PRIMARY, systemClock, type WriteOptions } from '../../src/index.js';
import { type CounterPosition, counterCodec } from './counter-codec.js';

/**
 * A scripted, in-memory {@link Adapter} for unit tests of the router. There is no database: the
 * test sets each replica's applied position, reachability, paused flag, lag and read failures
 * directly, and the adapter records every call so tests can assert on what the router did.
 * Delays run on the injected {@link Clock}, so a virtual clock makes timing deterministic.
 */

/** Parse `h.seq` text into a counter position (test shorthand: `cp('1.12')`). */
export function cp(text: string): CounterPosition {
  return counterCodec().decode(text);
}

/** Encode a counter position as `h.seq`. */
export function cpText(position: CounterPosition | undefined): string | undefined {
  return position === undefined ? undefined : `${position.history}.${position.seq}`;
}

/** What a scripted read or write callback receives. */
export interface ScriptedConnection {
  /** `primary` or the replica id the callback runs on. */
  readonly target: string;
  readonly readOnly: boolean;
}

/** The connection error scripted endpoints throw; `code` mimics a driver's network error. */
export class ScriptedConnectionError extends Error {
  readonly code = 'ECONNRESET';
}

/** Behaviour shared by replicas and the primary. Every field may be changed by a test at any time. */
interface ScriptedEndpoint {
  /** False: probes, reads and waits fail with a {@link ScriptedConnectionError}. */
  reachable: boolean;
  /** Errors thrown by the next reads (one per read, in order) before the callback runs. */
  readFailures: unknown[];
  /** Clock milliseconds each probe takes before it answers. */
  probeDelayMs: number;
  /**
   * Position a read reports as observed. `undefined`: the endpoint's current position;
   * `null`: report none (the adapter cannot tell).
   */
  observed: CounterPosition | null | undefined;
}

export interface ScriptedReplica extends ScriptedEndpoint {
  readonly id: string;
  /** Position the replica has applied; probes report it and waits compare against it. */
  applied: CounterPosition;
  paused: boolean;
  lagSeconds: number | undefined;
  lagBytes: number | undefined;
}

export interface ScriptedPrimary extends ScriptedEndpoint {
  /** Current position; each successful write advances its seq by one. */
  position: CounterPosition;
  /** Errors thrown by the next writes (one per write, in order) before the callback runs. */
  writeFailures: unknown[];
}

export interface WaitCall {
  readonly replica: string;
  readonly position: CounterPosition;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly at: number;
}

/** Everything the router asked of the adapter, in order. `at` is clock time. */
export interface AdapterCalls {
  readonly reads: Array<{
    readonly target: string;
    readonly at: number;
    readonly required?: CounterPosition | undefined;
    readonly observe?: boolean | undefined;
  }>;
  readonly waits: WaitCall[];
  /** Replica probes by id, and primary probes as `primary`. */
  readonly probes: Array<{
    readonly target: string;
    readonly at: number;
    readonly primary: CounterPosition | undefined;
  }>;
  readonly writes: Array<{ readonly at: number; readonly options: WriteOptions }>;
  /** Position-only observations by replica id (only with `observe: true`). */
  readonly observes: Array<{ readonly target: string; readonly at: number }>;
  closes: number;
}

export interface ScriptedAdapterOptions {
  replicas: readonly string[];
  /** Starting position of the primary and of every replica. Default `1.10`. */
  position?: CounterPosition;
  codec?: PositionCodec<CounterPosition>;
  /** Clock for scripted delays and waits. Default the system clock. */
  clock?: Clock;
  /** Offer `observe` (the applied position alone). Default false. */
  observe?: boolean;
  /** Offer `waitFor` (a server-side wait). Default true; false makes the router poll probes. */
  serverSideWait?: boolean;
  /**
   * Replaces the default server-side wait, which checks the replica's applied position every
   * clock millisecond until it covers the target or the timeout passes.
   */
  waitBehaviour?: (
    call: WaitCall,
    adapter: ScriptedAdapter,
  ) => Promise<WaitOutcome<CounterPosition>>;
  /** Supplied as the adapter's `isRetryable`; omitted by default (every error is retried). */
  isRetryable?: (error: unknown) => boolean;
}

export class ScriptedAdapter implements Adapter<CounterPosition, ScriptedConnection> {
  readonly codec: PositionCodec<CounterPosition>;
  readonly replicas: readonly string[];
  readonly primary: ScriptedPrimary;
  readonly calls: AdapterCalls = {
    reads: [],
    waits: [],
    probes: [],
    writes: [],
    observes: [],
    closes: 0,
  };
  // Declared, not initialised: the router must see these as absent unless configured.
  declare waitFor?: NonNullable<Adapter<CounterPosition, ScriptedConnection>['waitFor']>;
  declare observe?: NonNullable<Adapter<CounterPosition, ScriptedConnection>['observe']>;
  declare isRetryable?: (error: unknown) => boolean;
  /** Unset unless a test sets it (see Adapter.probeBeforeWaitMs). */
  probeBeforeWaitMs?: number;
  private readonly clock: Clock;
  private readonly nodes = new Map<string, ScriptedReplica>();
  /** Held probes per replica: the gate they wait on and the function that opens it. */
  private readonly holds = new Map<string, { gate: Promise<void>; release: () => void }>();

  constructor(options: ScriptedAdapterOptions) {
    const start = options.position ?? { history: 1, seq: 10 };
    this.codec = options.codec ?? counterCodec();
    this.replicas = [...options.replicas];
    this.clock = options.clock ?? systemClock;
    this.primary = { ...endpoint(), position: start, writeFailures: [] };
    for (const id of this.replicas) {
      this.nodes.set(id, {
        ...endpoint(),
        id,
        applied: start,
        paused: false,
        lagSeconds: 0,
        lagBytes: undefined,
      });
    }
    if (options.serverSideWait ?? true) {
      const behaviour = options.waitBehaviour ?? ((call) => this.defaultWait(call));
      this.waitFor = (replica, position, timeoutMs, context) => {
        const call: WaitCall = {
          replica,
          position,
          timeoutMs,
          signal: context.signal,
          at: this.clock.now(),
        };
        this.calls.waits.push(call);
        return behaviour(call, this);
      };
    }
    if (options.isRetryable) this.isRetryable = options.isRetryable;
    if (options.observe) {
      this.observe = async (id) => {
        this.calls.observes.push({ target: id, at: this.clock.now() });
        const node = this.replica(id);
        if (node.probeDelayMs > 0) await this.clock.sleep(node.probeDelayMs);
        if (!node.reachable) throw new ScriptedConnectionError(`${id} is unreachable`);
        return node.applied;
      };
    }
  }

  /** The scripted state of one replica; mutate its fields to change what the router sees. */
  replica(id: string): ScriptedReplica {
    const node = this.nodes.get(id);
    if (!node) throw new Error(`scripted adapter has no replica "${id}"`);
    return node;
  }

  /** Apply the same change to every replica (arrays in `patch` are shared: set them per replica). */
  setAll(patch: Partial<Omit<ScriptedReplica, 'id'>>): void {
    for (const node of this.nodes.values()) Object.assign(node, patch);
  }

  /** Targets of every read so far, in order. */
  readTargets(): string[] {
    return this.calls.reads.map((r) => r.target);
  }

  /** Number of reads sent to a replica id (or `primary`). */
  readCount(target: string): number {
    return this.calls.reads.filter((r) => r.target === target).length;
  }

  /** Number of probes of a replica id (or `primary`). */
  probeCount(target: string): number {
    return this.calls.probes.filter((p) => p.target === target).length;
  }

  /** Make probes of `id` hang until the returned function (or {@link releaseAll}) is called. */
  holdProbes(id: string): () => void {
    this.replica(id);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const release = () => {
      if (this.holds.get(id)?.gate === gate) this.holds.delete(id);
      open();
    };
    this.holds.set(id, { gate, release });
    return release;
  }

  /** Release every held probe (call before closing a router, whose close awaits probes). */
  releaseAll(): void {
    for (const { release } of [...this.holds.values()]) release();
  }

  async read<T>(
    target: string,
    fn: (connection: ScriptedConnection) => Promise<T>,
    context: ReadContext<CounterPosition>,
  ): Promise<ReadOutcome<T, CounterPosition>> {
    this.calls.reads.push({
      target,
      at: this.clock.now(),
      required: context.required,
      observe: context.observe,
    });
    const node = target === PRIMARY ? this.primary : this.replica(target);
    const failure = node.readFailures.shift();
    if (failure !== undefined) throw failure;
    if (!node.reachable) throw new ScriptedConnectionError(`${target} is unreachable`);
    const value = await fn({ target, readOnly: true });
    const current = target === PRIMARY ? this.primary.position : this.replica(target).applied;
    const observed = node.observed === undefined ? current : node.observed;
    return observed === null ? { value } : { value, observed };
  }

  async write<T>(
    fn: (connection: ScriptedConnection) => Promise<T>,
    options: WriteOptions,
  ): Promise<WriteOutcome<T, CounterPosition>> {
    this.calls.writes.push({ at: this.clock.now(), options });
    const failure = this.primary.writeFailures.shift();
    if (failure !== undefined) throw failure;
    if (!this.primary.reachable) throw new ScriptedConnectionError('primary is unreachable');
    const value = await fn({ target: PRIMARY, readOnly: false });
    // The commit happens here; the position is captured only after it.
    const { history, seq } = this.primary.position;
    this.primary.position = { history, seq: seq + 1 };
    return { value, position: this.primary.position };
  }

  async probe(
    id: string,
    context: ProbeContext<CounterPosition>,
  ): Promise<ProbeResult<CounterPosition>> {
    this.calls.probes.push({ target: id, at: this.clock.now(), primary: context.primary });
    const node = this.replica(id);
    const hold = this.holds.get(id);
    if (hold) await hold.gate;
    if (node.probeDelayMs > 0) await this.clock.sleep(node.probeDelayMs);
    if (!node.reachable) throw new ScriptedConnectionError(`${id} is unreachable`);
    return {
      applied: node.applied,
      paused: node.paused,
      ...(node.lagSeconds === undefined ? {} : { lagSeconds: node.lagSeconds }),
      ...(node.lagBytes === undefined ? {} : { lagBytes: node.lagBytes }),
    };
  }

  async probePrimary(_context: { signal: AbortSignal }): Promise<CounterPosition> {
    this.calls.probes.push({ target: PRIMARY, at: this.clock.now(), primary: undefined });
    if (this.primary.probeDelayMs > 0) await this.clock.sleep(this.primary.probeDelayMs);
    if (!this.primary.reachable) throw new ScriptedConnectionError('primary is unreachable');
    return this.primary.position;
  }

  async close(): Promise<void> {
    this.calls.closes++;
    this.releaseAll();
  }

  /** Server-side wait as WAIT FOR LSN behaves: returns as soon as the replica covers the target. */
  private async defaultWait(call: WaitCall): Promise<WaitOutcome<CounterPosition>> {
    const deadline = this.clock.now() + call.timeoutMs;
    for (;;) {
      const node = this.replica(call.replica);
      if (!node.reachable) throw new ScriptedConnectionError(`${call.replica} is unreachable`);
      const relation = this.codec.compare(node.applied, call.position);
      if (relation === 'covered') return { outcome: 'reached', applied: node.applied };
      if (relation === 'other-history') return { outcome: 'other-history' };
      const remaining = deadline - this.clock.now();
      if (remaining <= 0 || call.signal.aborted) return { outcome: 'timeout' };
      await this.clock.sleep(Math.min(1, remaining), call.signal);
    }
  }
}

function endpoint(): ScriptedEndpoint {
  return { reachable: true, readFailures: [], probeDelayMs: 0, observed: undefined };
}
