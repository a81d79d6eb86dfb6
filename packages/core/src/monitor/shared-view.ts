import { PRIMARY } from '../adapter.js';
import type { Clock } from '../clock.js';
import { ConfigError } from '../errors.js';
import { Emitter } from '../events.js';
import type { PositionCodec } from '../position.js';
import type { PollingMonitor } from './polling-monitor.js';
import { withDeadline } from './timers.js';
import type { ProbeResult, ProbeSample } from './types.js';

/**
 * Where the app instances of one cluster meet to share one view of the replicas: a lease that
 * elects one prober, and a broadcast of its samples. Core knows no Redis; `@tidemark/redis`
 * implements this with `SET NX PX` and pub/sub (`redisReplicaViewChannel`).
 *
 * Every call may fail or hang when the store is unreachable; the view bounds each call with a
 * timeout and falls back to local probing.
 */
export interface ReplicaViewChannel {
  /**
   * Take the prober lease of `scope` for `ttlMs` when nobody holds it, or extend it when `owner`
   * already holds it. Resolves whether `owner` holds it now.
   */
  lead(scope: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Give the lease of `scope` up, if `owner` holds it. */
  resign(scope: string, owner: string): Promise<void>;
  /** Send `message` to every subscriber of `scope` (fire and forget: no delivery guarantee). */
  publish(scope: string, message: string): Promise<void>;
  /**
   * Deliver every message published on `scope` from now on to `listener`. Resolves once
   * listening, with a function that stops it.
   */
  subscribe(scope: string, listener: (message: string) => void): Promise<() => Promise<void>>;
}

/** Options of a shared replica view (`Router` option `sharedView`). */
export interface SharedViewOptions {
  channel: ReplicaViewChannel;
  /**
   * Lease and broadcast name. Every instance of one cluster must use the same scope, and two
   * clusters must not. Default `tidemark:view:<cluster name>`.
   */
  scope?: string;
  /**
   * How long the prober's lease lasts without renewal; it renews every quarter of it. When the
   * prober dies, another instance takes over within this time plus a quarter. Default 2000 ms.
   */
  leaseMs?: number;
  /**
   * A node whose shared samples have been silent this long is probed locally, on the usual
   * interval, until samples flow again: so a dead prober or a lost message never leaves an
   * instance with an aging view (health rules would soon take the replica out of routing).
   * Default 2.5 probe intervals (500 ms).
   */
  silentAfterMs?: number;
  /** A channel call that takes longer than this counts as failed. Default `leaseMs / 4`. */
  callTimeoutMs?: number;
  /** This instance's name in the lease. Default: random. */
  owner?: string;
}

/**
 * What this instance does: `prober` (holds the lease, probes and publishes), `follower` (takes
 * the prober's samples, probes only nodes whose feed went silent), `local` (the channel failed:
 * probes everything itself, as without a shared view, and retries the channel).
 */
export type SharedViewRole = 'prober' | 'follower' | 'local';

export interface SharedViewEvents {
  role: (event: { role: SharedViewRole; previous: SharedViewRole; error?: unknown }) => void;
}

/** Counters of a shared view, in {@link Router.metrics} as `sharedView`. */
export interface SharedViewStats {
  readonly role: SharedViewRole;
  readonly samplesPublished: number;
  readonly samplesReceived: number;
  /** Messages that did not parse, named an unknown node, or carried a position that did not decode. */
  readonly samplesRejected: number;
  readonly channelErrors: number;
  readonly roleChanges: number;
}

/** Wire format version; a message of another version is rejected, not guessed at. */
const VERSION = 1;
/** Positions are short; anything much larger is not a sample. */
const MAX_MESSAGE_BYTES = 256 * 1024;

/**
 * One message: a replica probe (`n` = replica id) or a primary probe (`n` = `primary`). Times
 * are ages, not timestamps: the instances' monotonic clocks share no origin. `a` is the sample's
 * age when published (prober's clock), `w` the prober's wall clock at publication (to add the
 * transit time where the clocks agree).
 */
interface WireSample {
  v: number;
  o: string;
  n: string;
  a: number;
  w: number;
  p?: string;
  ls?: number;
  lb?: number;
  z?: boolean;
  e?: string;
}

/**
 * One view of the replicas for many app instances: the instance
 * holding the lease probes every node on the monitor's interval and publishes each sample; the
 * others apply them to their own monitor as if they had probed (the same health rules judge
 * their age) and stop their background probes. Probe load on the replicas is then that of one
 * instance, whatever the number of instances.
 *
 * Correctness never rests on the channel. A sample only raises a replica's known position
 * (positions never go back), and its age is carried so a delayed sample looks as old as it is.
 * A node whose feed goes silent is probed locally again after `silentAfterMs`; a channel that
 * fails sends the instance back to local probing (role `local`) until it answers again. Probes
 * that reads and waits ask for (settling what a read saw, waiting for a replica) stay local.
 *
 * Trust: whoever can publish on the channel can claim positions for replicas; protect the store
 * as you protect database credentials.
 */
export class SharedReplicaView<P> {
  readonly events = new Emitter<SharedViewEvents>();
  readonly scope: string;
  private readonly owner: string;
  private readonly channel: ReplicaViewChannel;
  private readonly leaseMs: number;
  private readonly silentAfterMs: number;
  private readonly callTimeoutMs: number;
  private monitor: PollingMonitor<P> | undefined;
  private currentRole: SharedViewRole = 'local';
  /** Local clock time of the last sample heard per node (replica id or `primary`). */
  private readonly heardAt = new Map<string, number>();
  private startedAt = Number.NEGATIVE_INFINITY;
  private unsubscribe: (() => Promise<void>) | undefined;
  private subscribing: Promise<void> | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private detach: Array<() => void> = [];
  private running = false;
  private counts = {
    samplesPublished: 0,
    samplesReceived: 0,
    samplesRejected: 0,
    channelErrors: 0,
    roleChanges: 0,
  };

  constructor(
    options: SharedViewOptions,
    private readonly context: {
      cluster: string;
      codec: PositionCodec<P>;
      clock: Clock;
      nodes: readonly string[];
    },
  ) {
    if (!options.channel || typeof options.channel.lead !== 'function') {
      throw new ConfigError(
        'sharedView.channel must implement ReplicaViewChannel (lead, resign, publish, subscribe); @tidemark/redis provides one.',
      );
    }
    this.channel = options.channel;
    this.scope = options.scope ?? `tidemark:view:${context.cluster}`;
    if (this.scope.length === 0) throw new ConfigError('sharedView.scope must not be empty.');
    this.leaseMs = positive('sharedView.leaseMs', options.leaseMs ?? 2000);
    this.silentAfterMs = positive('sharedView.silentAfterMs', options.silentAfterMs ?? 500);
    this.callTimeoutMs = positive(
      'sharedView.callTimeoutMs',
      options.callTimeoutMs ?? this.leaseMs / 4,
    );
    this.owner = options.owner ?? randomOwner();
  }

  /** See {@link SharedViewRole}. */
  role(): SharedViewRole {
    return this.currentRole;
  }

  stats(): SharedViewStats {
    return { role: this.currentRole, ...this.counts };
  }

  /**
   * For the monitor's `shouldPoll`: probe a node in the background unless another instance's
   * samples of it are fresh.
   */
  readonly shouldPoll = (node: string): boolean => {
    if (this.currentRole !== 'follower') return true;
    const heard = this.heardAt.get(node) ?? this.startedAt;
    return this.context.clock.now() - heard > this.silentAfterMs;
  };

  /** One listener for every subscribe call, so a channel can tell a retry from a second one. */
  private readonly onMessage = (message: string): void => this.receive(message);

  /** Begin: publish this monitor's probes while prober, apply others' while follower. */
  start(monitor: PollingMonitor<P>): void {
    if (this.running) return;
    this.running = true;
    this.monitor = monitor;
    // Until the first lease answer, and for a grace period after, nothing is silent yet.
    this.startedAt = this.context.clock.now();
    this.detach.push(
      monitor.events.on('probe', (sample) => this.publishProbe(sample)),
      monitor.events.on('primary-probe', ({ position, seenAt }) =>
        this.publish({ n: PRIMARY, p: this.context.codec.encode(position) }, seenAt),
      ),
    );
    void this.tick();
  }

  /** Stop, give the lease up (another instance takes over at once), stop listening. */
  async close(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    clearTimeout(this.timer);
    for (const off of this.detach) off();
    this.detach = [];
    const wasProber = this.currentRole === 'prober';
    await this.subscribing?.catch(() => undefined);
    await Promise.allSettled([
      this.unsubscribe ? this.bounded(this.unsubscribe()) : undefined,
      wasProber ? this.bounded(this.channel.resign(this.scope, this.owner)) : undefined,
    ]);
    this.unsubscribe = undefined;
  }

  /** One lease round: subscribe if not yet, take or renew the lease, settle the role. */
  private async tick(): Promise<void> {
    if (!this.running) return;
    try {
      await this.ensureSubscribed();
      const leading = await this.bounded(this.channel.lead(this.scope, this.owner, this.leaseMs));
      this.setRole(leading ? 'prober' : 'follower');
    } catch (error) {
      this.counts.channelErrors++;
      this.setRole('local', error);
    }
    if (!this.running) return;
    this.timer = setTimeout(() => void this.tick(), this.leaseMs / 4);
    (this.timer as { unref?: () => void }).unref?.();
  }

  private ensureSubscribed(): Promise<void> {
    if (this.unsubscribe) return Promise.resolve();
    this.subscribing ??= this.bounded(this.channel.subscribe(this.scope, this.onMessage))
      .then((stop) => {
        if (this.running) this.unsubscribe = stop;
        else void stop().catch(() => undefined);
      })
      .finally(() => {
        this.subscribing = undefined;
      });
    return this.subscribing;
  }

  private setRole(role: SharedViewRole, error?: unknown): void {
    const previous = this.currentRole;
    if (previous === role) return;
    this.currentRole = role;
    this.counts.roleChanges++;
    // A new follower gives the prober's feed a full grace period before probing on its own.
    if (role === 'follower') this.startedAt = this.context.clock.now();
    this.events.emit('role', error === undefined ? { role, previous } : { role, previous, error });
  }

  private publishProbe(sample: ProbeSample<P>): void {
    if ('error' in sample) {
      const error = sample.error instanceof Error ? sample.error.message : String(sample.error);
      this.publish({ n: sample.id, e: error.slice(0, 200) }, sample.sentAt);
      return;
    }
    const { applied, lagSeconds, lagBytes, paused } = sample.result;
    this.publish(
      {
        n: sample.id,
        p: this.context.codec.encode(applied),
        ...(lagSeconds !== undefined && { ls: lagSeconds }),
        ...(lagBytes !== undefined && { lb: lagBytes }),
        ...(paused && { z: true }),
      },
      sample.sentAt,
    );
  }

  private publish(fields: Omit<WireSample, 'v' | 'o' | 'a' | 'w'>, sampledAt: number): void {
    if (this.currentRole !== 'prober') return;
    const message: WireSample = {
      v: VERSION,
      o: this.owner,
      a: Math.max(0, this.context.clock.now() - sampledAt),
      w: Date.now(),
      ...fields,
    };
    this.bounded(this.channel.publish(this.scope, JSON.stringify(message))).then(
      () => {
        this.counts.samplesPublished++;
      },
      () => {
        this.counts.channelErrors++;
      },
    );
  }

  private receive(text: string): void {
    const monitor = this.monitor;
    if (!monitor || !this.running) return;
    const sample = this.parse(text);
    if (sample === undefined) {
      this.counts.samplesRejected++;
      return;
    }
    if (sample === 'own') return;
    this.counts.samplesReceived++;
    const now = this.context.clock.now();
    // The sample's age at publication plus the transit; the transit only where the wall clocks
    // say it was positive (a clock behind the prober's would make it look fresher than it is).
    const transit = Math.min(this.silentAfterMs, Math.max(0, Date.now() - sample.w));
    const at = now - sample.a - transit;
    this.heardAt.set(sample.node, now);
    if (sample.node === PRIMARY) {
      if (sample.position !== undefined) monitor.ingestPrimary(sample.position, at);
      return;
    }
    if (sample.position === undefined) {
      monitor.ingest({ id: sample.node, sentAt: at, error: new Error(sample.error) });
      return;
    }
    const result: ProbeResult<P> = {
      applied: sample.position,
      ...(sample.lagSeconds !== undefined && { lagSeconds: sample.lagSeconds }),
      ...(sample.lagBytes !== undefined && { lagBytes: sample.lagBytes }),
      paused: sample.paused,
    };
    monitor.ingest({ id: sample.node, sentAt: at, result });
  }

  /** A validated sample, `own` for this instance's own message, undefined for anything else. */
  private parse(text: string):
    | {
        node: string;
        a: number;
        w: number;
        position: P | undefined;
        error: string;
        lagSeconds: number | undefined;
        lagBytes: number | undefined;
        paused: boolean;
      }
    | 'own'
    | undefined {
    if (typeof text !== 'string' || text.length > MAX_MESSAGE_BYTES) return undefined;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return undefined;
    }
    if (typeof raw !== 'object' || raw === null) return undefined;
    const m = raw as Partial<WireSample>;
    if (m.v !== VERSION || typeof m.o !== 'string' || typeof m.n !== 'string') return undefined;
    if (m.o === this.owner) return 'own';
    if (m.n !== PRIMARY && !this.context.nodes.includes(m.n)) return undefined;
    if (!finiteAtLeastZero(m.a) || !Number.isFinite(m.w)) return undefined;
    if (m.ls !== undefined && !finiteAtLeastZero(m.ls)) return undefined;
    if (m.lb !== undefined && !finiteAtLeastZero(m.lb)) return undefined;
    if (m.z !== undefined && typeof m.z !== 'boolean') return undefined;
    let position: P | undefined;
    if (m.p !== undefined) {
      if (typeof m.p !== 'string') return undefined;
      try {
        position = this.context.codec.decode(m.p);
      } catch {
        return undefined;
      }
    } else if (typeof m.e !== 'string' || m.n === PRIMARY) {
      return undefined;
    }
    return {
      node: m.n,
      a: m.a,
      w: m.w as number,
      position,
      error: `shared view: the prober's probe failed: ${m.e ?? ''}`,
      lagSeconds: m.ls,
      lagBytes: m.lb,
      paused: m.z ?? false,
    };
  }

  /** The call, or a rejection after `callTimeoutMs`: an unreachable store must not stall us. */
  private bounded<T>(promise: Promise<T>): Promise<T> {
    return withDeadline(
      promise,
      this.callTimeoutMs,
      () => new Error(`shared view: no answer within ${this.callTimeoutMs} ms`),
    );
  }
}

function finiteAtLeastZero(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) {
    throw new ConfigError(`${name} must be a positive number of ms, got ${value}.`);
  }
  return value;
}

function randomOwner(): string {
  const bytes = new Uint8Array(9);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
