import {
  type Adapter,
  PRIMARY,
  type PrimaryVerdict,
  type ReadContext,
  type ReadOutcome,
  type WriteOptions,
  type WriteOutcome,
} from './adapter.js';
import { CatchUpWatchers } from './catch-up.js';
import { type Clock, systemClock } from './clock.js';
import { ConcurrencyLimit, DEFAULT_ADAPTIVE_LIMIT } from './concurrency-limit.js';
import {
  CheckFailed,
  type Decided,
  decide,
  enforceable,
  type FallbackReason,
  IGNORED_TOKEN,
  NO_TOKEN,
  type ResolvedToken,
  type Route,
  type Rungs,
  replicaDecision,
} from './decide.js';
import type { DecisionEvent, DecisionReason, RouteDecision } from './decision.js';
import {
  ConfigError,
  ErrorCode,
  HistoryUnverifiedError,
  OtherHistoryError,
  ReplicasBehindError,
  TidemarkError,
  TokenError,
} from './errors.js';
import { Emitter } from './events.js';
import { type HealthOptions, isHealthy } from './health.js';
import {
  type AcquireOptions,
  type Borrowed,
  borrow,
  connectionOf,
  HeldLease,
  type Lease,
  LeaseError,
  type LeaseKind,
  type LeaseRevokeReason,
  type LeaseRoute,
} from './lease.js';
import { RouterMetrics } from './metrics.js';
import { PollingMonitor, type PollingMonitorOptions } from './monitor/polling-monitor.js';
import { PrimarySamples } from './monitor/primary-samples.js';
import {
  SharedReplicaView,
  type SharedViewOptions,
  type SharedViewRole,
  type SharedViewStats,
} from './monitor/shared-view.js';
import type { ReplicaHistory, ReplicaMonitor, ReplicaState } from './monitor/types.js';
import { bestEffortReplica, planRead, type ReadPlan } from './plan.js';
import type { PositionCodec } from './position.js';
import { RateLimiter, type RateLimiterOptions } from './rate-limiter.js';
import { RecentReadShares } from './read-shares.js';
import {
  type ReplicaLoad,
  type SelectionName,
  type SelectionPolicy,
  selectionPolicy,
} from './selection.js';
import { Session } from './session.js';
import { SessionHandle } from './session-handle.js';
import {
  naiveWouldMiss,
  predictedOutcome,
  probeFromNow,
  ShadowLedger,
  type ShadowPrediction,
  type ShadowReport,
} from './shadow.js';
import { assertClusterName, TokenCodec } from './token.js';
import { BoundedWait } from './wait.js';
import { AutoBudget, constantBudget, type WaitBudget } from './wait-budget.js';

export interface RouterOptions<P, C> {
  adapter: Adapter<P, C>;
  /** Name of this cluster inside tokens. Default `default`. */
  cluster?: string;
  /** Supply a monitor; by default a {@link PollingMonitor} over the adapter's probes. */
  monitor?: ReplicaMonitor<P>;
  /**
   * Share one view of the replicas between the app instances of this cluster: one instance
   * (elected by a lease) probes and publishes, the others apply its samples instead of probing.
   * See {@link SharedReplicaView}; `redisReplicaViewChannel` from `@tidemark/redis` is the
   * channel. Not with `monitor`.
   */
  sharedView?: SharedViewOptions;
  /** Options of the default polling monitor. */
  monitorOptions?: Partial<
    Omit<PollingMonitorOptions<P>, 'codec' | 'replicas' | 'probe' | 'probePrimary'>
  >;
  health?: Partial<HealthOptions>;
  /**
   * Which covered replica serves a read. Default `balanced`: power of two choices on this
   * router's in-flight reads per replica, lag as tie-break (see {@link balanced}).
   */
  selection?: SelectionName | SelectionPolicy;
  wait?: {
    /**
     * Total time one read may wait for replicas to catch up. Default 250 ms; 0 disables.
     * `'auto'`: learned per replica from the waits this router sees, given how old the
     * position waited for is (the 99th percentile of the catch-up time left, with headroom,
     * while waits at that age pay; no wait while they mostly run out), never above
     * `maxBudgetMs`; see {@link AutoBudget}.
     */
    budgetMs?: number | 'auto';
    /** Ceiling of an `'auto'` budget. Default 250 ms. */
    maxBudgetMs?: number;
    /**
     * Pause between probes while a read waits and the adapter has no server-side wait
     * (PostgreSQL before 19). Default 1 ms: the probes of one replica are shared by every read
     * waiting on it (one in flight at a time), so waiting readers wake about one probe round
     * trip after the replica applies their position, and only while someone waits.
     */
    pollIntervalMs?: number;
  };
  /**
   * Leader fallback under a cap (invariant 5). By default the cap bounds how many primary
   * fallback reads are in flight at once (`maxConcurrent`, with a short queue): it never binds
   * on a healthy primary, which answers fast, and binds when the primary slows down. Setting
   * `ratePerSecond` or `burst` adds a token bucket on top.
   */
  fallback?: {
    /** Default true. */
    enabled?: boolean;
    /**
     * Primary fallback reads (`primary-fallback`, `primary-no-replica`) this router runs at once.
     * A number is a fixed limit: 16 slots pass 16,000 reads/s of a primary answering in 1 ms and
     * 8/s of one taking 2 s. Default `'auto'`: 16 slots, growing (up to 256) while the slots are
     * all in use and fallback reads keep answering in under 50 ms and under twice their usual
     * time, shrinking back toward 16 when they slow down; so one busy app process is not held
     * below what a healthy primary serves, and a primary in trouble still sees at most 16.
     * `metrics().fallbackLimit` shows the current limit.
     */
    maxConcurrent?: number | 'auto';
    /**
     * How long a fallback read may queue for a free slot when `maxConcurrent` are in flight,
     * before the `degraded` policy applies. Default 250 ms; 0: never queue.
     */
    queueMs?: number;
    /**
     * A separate, smaller cap for primary reads of sessions whose position is from another
     * history or could not be verified (`otherHistory: 'primary'`), so that a burst of forged or
     * lost positions cannot spend the cap honest sessions rely on. Above it those reads get
     * their typed error. Default 10 per second, burst 10.
     */
    otherHistory?: Partial<RateLimiterOptions>;
  } & Partial<RateLimiterOptions>; // ratePerSecond, burst: no bucket unless one of them is set
  /**
   * Above the fallback cap: `error` throws {@link ReplicasBehindError} (retryable, with an ETA),
   * `stale` serves from the best replica and marks the decision stale. Default `error`.
   */
  degraded?: 'error' | 'stale';
  /**
   * A session position that does not decode, or that is ahead of the primary (impossible):
   * `reject` throws the TokenError, `ignore` treats the session as having no position.
   * Both are counted. Default `reject`.
   */
  badToken?: 'reject' | 'ignore';
  /**
   * A session position from another history (lost in a failover): `error` throws
   * {@link OtherHistoryError}; `primary` reads from the primary (under its own cap, see
   * `fallback.otherHistory`). The same policy applies when the history check cannot answer:
   * `error` throws {@link HistoryUnverifiedError} (retryable), `primary` reads the primary without
   * raising the session. Default `error`.
   */
  otherHistory?: 'error' | 'primary';
  /**
   * When the position a read observed is settled (invariant 3). `deferred` (default): the read
   * returns as soon as its query does and its connection goes back to the pool at once; the
   * position is taken from a probe of the same node sent after the read, shared by every read
   * that finished before it, only when someone needs it: the session's next read (unless it
   * stays on the same replica, which is monotonic by itself) or `session.settled()` before its
   * token is encoded. A session never used again costs nothing. `immediate`: settle before the
   * read returns (same shared probe), or, where the adapter can return a replica's position with
   * the read in the same round trip (`observesWithRead`: `@tidemark/pg` on node-postgres 8.23+),
   * from the read itself with no probe at all while the read is alone on its replica (with
   * company, the shared probe serves them all for less): the choice for an app that encodes every
   * request's token before the response (the HTTP carriers without `carryPending`).
   */
  settle?: 'deferred' | 'immediate';
  /**
   * `route` (default) routes reads as described above. `shadow` sends every read to the primary,
   * as an app without replica reads does, and predicts in the background, for each read, what
   * `route` would have done (replica, wait and how long, primary, error) and whether a naive
   * replica router would have served it without the session's own writes: the numbers a team
   * needs before turning replica reads on. Predictions use the monitor's state and the same
   * shared probes a real wait sends; no read runs on a replica. Writes capture positions as in
   * `route`, so tokens must travel as they will. See {@link Router.shadowReport}.
   */
  mode?: 'route' | 'shadow';
  /**
   * How {@link Router.withSession} and its handles' `token()` decode and encode token text.
   * Default: an unsigned `TokenCodec`. Pass `new TokenCodec({ keys })` to sign tokens (a client
   * that edits an unsigned token can only make its own reads stricter or fail, but signing lets
   * you reject such tokens outright).
   */
  tokens?: TokenCodec;
  clock?: Clock;
}

export interface ReadOptions {
  /** Stable key (user or session id) for the `affinity` selection policy. */
  affinityKey?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface RouterEvents<P> {
  decision: (decision: DecisionEvent) => void;
  /**
   * A read threw (typed routing error, or the read failed on its target and on the retry, or the
   * caller's own query failed): no `decision` follows for it.
   */
  'read-error': (event: { cluster: string; error: unknown; durationMs: number }) => void;
  wait: (event: {
    cluster: string;
    replica: string;
    waitedMs: number;
    reached: boolean;
    serverSide: boolean;
  }) => void;
  'cap-rejected': (event: { cluster: string; waitedMs: number }) => void;
  retry: (event: { cluster: string; failedTarget: string; error: unknown }) => void;
  'bad-token': (event: { cluster: string; error: TokenError }) => void;
  'other-history': (event: { cluster: string; position: P }) => void;
  /** The history check of a session's position could not answer (fail closed). */
  'history-unverified': (event: { cluster: string; error: unknown }) => void;
  /** A write succeeded, and the session's earlier position was found lost (see {@link LostWrite}). */
  'lost-write': (event: LostWrite & { readonly written: P }) => void;
  /** A replica's history verdict changed; `diverged` replicas serve no reads. */
  'replica-history': (event: {
    cluster: string;
    replica: string;
    history: ReplicaHistory;
    previous: ReplicaHistory;
  }) => void;
  /** A write finished; `position` is undefined while its capture is deferred (`Router.write`). */
  write: (event: { cluster: string; position: P | undefined; durationMs: number }) => void;
  'replica-state': (state: ReplicaState<P>) => void;
  /** This instance's part in the shared replica view changed (see {@link SharedViewRole}). */
  'shared-view': (event: {
    cluster: string;
    role: SharedViewRole;
    previous: SharedViewRole;
    error?: unknown;
  }) => void;
  /** A lease was taken back before its holder released it (see {@link Router.acquire}). */
  'lease-revoked': (event: {
    cluster: string;
    kind: LeaseKind;
    target: string;
    reason: LeaseRevokeReason;
    heldMs: number;
  }) => void;
}

/** Result of {@link Router.readDetailed}. */
export interface RoutedRead<T> {
  readonly value: T;
  readonly decision: RouteDecision;
  /**
   * Shadow mode only: where the read would have gone. It resolves in the background after the
   * read returned (a predicted wait takes as long as the real one would) and never rejects.
   */
  readonly prediction?: Promise<ShadowPrediction>;
}

/** A read routed by the ladder, with what `attempt` made of its final route. */
interface Routed<P, X> {
  readonly result: X;
  /** The route the result came from (the retry's, when the first target failed). */
  readonly final: Decided<P>;
  readonly waitedMs: number;
  readonly retried: boolean;
  readonly prediction?: Promise<ShadowPrediction> | undefined;
}

/**
 * A session's earlier position that a write found not to be part of the current history: the
 * write itself succeeded, but an earlier write of this session was lost in a failover
 * (`other-history`), or the primary could not be asked (`unverified`). The session now holds the
 * new write's position, so its next reads see the new write; what was lost is for the app to
 * handle (tell the user, re-submit).
 */
export interface LostWrite {
  readonly cluster: string;
  /** The earlier position, encoded as in a token. */
  readonly position: string;
  readonly verdict: 'other-history' | 'unverified';
}

/** Result of {@link Router.writeDetailed}. */
export interface WriteResult<T> {
  readonly value: T;
  /** Set when the session's earlier position was lost or could not be verified. */
  readonly lostWrite: LostWrite | undefined;
}

/**
 * The token router: sends each read to a replica that has applied the session's position,
 * waits a bounded time, falls back to the primary under a cap, else degrades by policy
 * (README.md, "How it works"). One router per cluster; one session can span several routers.
 */
export class Router<P, C> {
  readonly cluster: string;
  readonly monitor: ReplicaMonitor<P>;
  /** Present with the `sharedView` option. */
  readonly sharedView: SharedReplicaView<P> | undefined;
  readonly events = new Emitter<RouterEvents<P>>();
  /** The adapter's position codec: carriers and stores merge positions with it. */
  readonly codec: PositionCodec<P>;
  /** Effective health limits; carriers derive token lifetimes from them. */
  readonly health: Readonly<HealthOptions>;
  private readonly adapter: Adapter<P, C>;
  private readonly clock: Clock;
  private readonly selection: SelectionPolicy;
  private readonly boundedWait: BoundedWait<P>;
  /** One watcher per replica, shared by every read waiting on it (and by shadow predictions). */
  private readonly catchUp: CatchUpWatchers<P>;
  /** Token bucket on primary fallbacks, only when the options set a rate or a burst. */
  private readonly bucket: RateLimiter | undefined;
  private readonly fallbackLimit: ConcurrencyLimit | undefined;
  private readonly fallbackQueueMs: number;
  /** Reads this router has running per target (replica id or `primary`). */
  private readonly inFlight = new Map<string, number>();
  /** Replica shares of recent reads: caps the free stay on a session's last replica. */
  private readonly readShares = new RecentReadShares(256);
  private overShareStays = 0;
  private readonly load: ReplicaLoad = {
    inFlight: (id) => this.inFlight.get(id) ?? 0,
    recentShare: (id) => this.readShares.share(id),
  };
  /** The selection policy promises an even spread, which staying must not undo. */
  private readonly spreadsReads: boolean;
  private readonly otherHistoryBucket: RateLimiter | undefined;
  private readonly degraded: 'error' | 'stale';
  private readonly badToken: 'reject' | 'ignore';
  private readonly otherHistory: 'error' | 'primary';
  private readonly settleMode: 'deferred' | 'immediate';
  private readonly counters = new RouterMetrics();
  /** Shadow mode's predictions; undefined in `route` mode. */
  private readonly shadow: ShadowLedger | undefined;
  /** The wait rung of predictions: real shared probes, but no counters or `wait` events. */
  private readonly shadowWait: BoundedWait<P>;
  private readonly tokens: TokenCodec;
  /** Leases not yet released, revoked by `close()`. */
  private readonly leases = new Set<HeldLease<C>>();
  private closed = false;

  constructor(options: RouterOptions<P, C>) {
    this.adapter = options.adapter;
    this.codec = options.adapter.codec;
    this.cluster = options.cluster ?? 'default';
    assertClusterName(this.cluster);
    if (this.adapter.replicas.includes(PRIMARY)) {
      throw new ConfigError(`A replica may not be named "${PRIMARY}"; rename it.`);
    }
    this.clock = options.clock ?? systemClock;
    this.tokens = options.tokens ?? new TokenCodec();
    const intervalMs = options.monitorOptions?.intervalMs ?? 200;
    this.health = {
      // Five missed polls before a silent replica stops counting as healthy.
      maxSampleAgeMs: options.health?.maxSampleAgeMs ?? Math.max(1000, intervalMs * 5),
      maxLagSeconds: options.health?.maxLagSeconds ?? 10,
    };
    this.selection = selectionPolicy(options.selection ?? 'balanced');
    this.spreadsReads = SPREADING_POLICIES.has(this.selection.name);
    const fallbackEnabled = options.fallback?.enabled ?? true;
    const bucketSet =
      options.fallback?.ratePerSecond !== undefined || options.fallback?.burst !== undefined;
    this.bucket =
      fallbackEnabled && bucketSet
        ? new RateLimiter(
            {
              ratePerSecond: options.fallback?.ratePerSecond ?? 50,
              burst: options.fallback?.burst ?? 50,
            },
            this.clock,
          )
        : undefined;
    const maxConcurrent = options.fallback?.maxConcurrent ?? 'auto';
    this.fallbackLimit = fallbackEnabled
      ? maxConcurrent === 'auto'
        ? new ConcurrencyLimit(DEFAULT_ADAPTIVE_LIMIT.floor, this.clock, DEFAULT_ADAPTIVE_LIMIT)
        : new ConcurrencyLimit(maxConcurrent, this.clock)
      : undefined;
    this.fallbackQueueMs = nonNegative('fallback.queueMs', options.fallback?.queueMs ?? 250);
    this.otherHistoryBucket = fallbackEnabled
      ? new RateLimiter(
          {
            ratePerSecond: options.fallback?.otherHistory?.ratePerSecond ?? 10,
            burst: options.fallback?.otherHistory?.burst ?? 10,
          },
          this.clock,
        )
      : undefined;
    this.degraded = oneOf('degraded', options.degraded ?? 'error', ['error', 'stale'] as const);
    this.badToken = oneOf('badToken', options.badToken ?? 'reject', ['reject', 'ignore'] as const);
    this.settleMode = oneOf('settle', options.settle ?? 'deferred', [
      'deferred',
      'immediate',
    ] as const);
    this.otherHistory = oneOf('otherHistory', options.otherHistory ?? 'error', [
      'error',
      'primary',
    ] as const);
    if (options.sharedView && options.monitor) {
      throw new ConfigError(
        'Pass either `monitor` or `sharedView`: a shared view drives the default polling monitor.',
      );
    }
    this.sharedView = options.sharedView
      ? new SharedReplicaView<P>(options.sharedView, {
          cluster: this.cluster,
          codec: this.adapter.codec,
          clock: this.clock,
          nodes: this.adapter.replicas,
        })
      : undefined;
    const polling = options.monitor
      ? undefined
      : new PollingMonitor<P>({
          ...options.monitorOptions,
          shouldPoll: this.sharedView?.shouldPoll,
          codec: this.adapter.codec,
          replicas: this.adapter.replicas,
          probe: (id, context) => this.adapter.probe(id, context),
          observe: this.adapter.observe
            ? (id, context) => this.adapter.observe!(id, context)
            : undefined,
          probePrimary: (context) => this.adapter.probePrimary(context),
          classifyAgainstPrimary: this.adapter.classifyAgainstPrimary
            ? (primary, applied) => this.adapter.classifyAgainstPrimary!(primary, applied)
            : undefined,
          coveredNeedsVerdict: this.adapter.coveredNeedsVerdict,
          clock: this.clock,
        });
    this.monitor = options.monitor ?? (polling as PollingMonitor<P>);
    this.catchUp = new CatchUpWatchers<P>({
      adapter: this.adapter,
      codec: this.adapter.codec,
      monitor: this.monitor,
      clock: this.clock,
      pollIntervalMs: positive('wait.pollIntervalMs', options.wait?.pollIntervalMs ?? 1),
    });
    const budget = waitBudget(options.wait);
    this.boundedWait = new BoundedWait<P>({
      adapter: this.adapter,
      codec: this.adapter.codec,
      monitor: this.monitor,
      clock: this.clock,
      selection: this.selection,
      load: this.load,
      budget,
      ...(budget instanceof AutoBudget ? { ageOf: this.positionAges() } : {}),
      watchers: this.catchUp,
      onWait: (report) => {
        this.counters.recordWait(report.waitedMs, report.reached);
        if (this.events.has('wait')) this.events.emit('wait', { cluster: this.cluster, ...report });
      },
    });
    this.shadow =
      oneOf('mode', options.mode ?? 'route', ['route', 'shadow'] as const) === 'shadow'
        ? new ShadowLedger()
        : undefined;
    this.shadowWait = this.boundedWait.withReport(() => undefined);
    this.monitor.events.on('state', (state) => this.events.emit('replica-state', state));
    this.monitor.events.on('history', ({ id, history, previous }) => {
      if (history === 'diverged') this.counters.replicasDiverged++;
      this.events.emit('replica-history', {
        cluster: this.cluster,
        replica: id,
        history,
        previous,
      });
    });
    this.monitor.start();
    if (this.sharedView && polling) {
      this.sharedView.events.on('role', (event) =>
        this.events.emit('shared-view', { cluster: this.cluster, ...event }),
      );
      this.sharedView.start(polling);
    }
  }

  /**
   * Probe the primary, then every replica, once; call before serving traffic. The primary goes
   * first because replicas are judged against it (history and staleness, invariant 9): a replica
   * sampled after the primary covers that sample when it is caught up.
   */
  async ready(): Promise<void> {
    await this.monitor.refreshPrimary().catch(() => undefined);
    await this.monitor.refresh();
  }

  /**
   * Run a write on the primary. The position is captured after the commit on the committing
   * connection and raised into the session. Writes are never retried by the router.
   */
  async write<T>(
    session: Session,
    fn: (connection: C) => Promise<T>,
    options: WriteOptions = {},
  ): Promise<T> {
    return (await this.runWrite(session, fn, { capture: false, ...options })).value;
  }

  /**
   * Like {@link Router.write}, and also says whether the session's earlier position was lost:
   * when the session already held a position the new write does not cover, it is checked against
   * the primary's history first (no round trip while the monitor's primary sample answers it).
   * A lost position is reported here, by a `lost-write` event and in metrics, never dropped in
   * silence (invariant 4); the session then holds the new write's position.
   */
  async writeDetailed<T>(
    session: Session,
    fn: (connection: C) => Promise<T>,
    options: WriteOptions = {},
  ): Promise<WriteResult<T>> {
    // The verdict is part of the answer, so the position is captured now.
    return this.runWrite(session, fn, { ...options, capture: true });
  }

  private async runWrite<T>(
    session: Session,
    fn: (connection: C) => Promise<T>,
    options: WriteOptions,
  ): Promise<WriteResult<T>> {
    this.assertOpen();
    const started = this.clock.now();
    const before = this.monitor.primaryPosition();
    const { value, position } = await this.adapter.write(fn, options);
    return { value, lostWrite: await this.recordWrite(session, position, started, before) };
  }

  /**
   * Raise the session to a finished write's position (`undefined`: not captured, settled later
   * from a primary probe), count it and report it. `before`: the primary's sample before it began.
   */
  private async recordWrite(
    session: Session,
    position: P | undefined,
    started: number,
    before: P | undefined,
  ): Promise<LostWrite | undefined> {
    if (position === undefined) {
      this.counters.writes++;
      const ticket = this.monitor.ticket();
      session.defer(this.cluster, {
        target: PRIMARY,
        write: true,
        settle: () => this.settleWrite(session, ticket, before),
      });
      if (this.events.has('write')) {
        this.events.emit('write', {
          cluster: this.cluster,
          position: undefined,
          durationMs: this.clock.now() - started,
        });
      }
      return undefined;
    }
    this.monitor.observePrimary(position);
    this.counters.writes++;
    const lostWrite = await this.raiseAfterWrite(session, position);
    if (this.events.has('write')) {
      this.events.emit('write', {
        cluster: this.cluster,
        position,
        durationMs: this.clock.now() - started,
      });
    }
    return lostWrite;
  }

  /**
   * A handle for one user's session: `read`, `write`, `transaction` and `token()` without passing
   * the session around. `from` is the token text the client sent back (cookie, header; nothing
   * or an empty string: a new session), a {@link Session}, or another handle (of this or another
   * router) whose session it then shares, so one token carries several databases' positions.
   * Token text that does not decode follows the `badToken` policy: `reject` throws the
   * `TokenError`, `ignore` counts it and starts a new session.
   */
  withSession(from?: string | Session | SessionHandle<unknown> | null): SessionHandle<C> {
    this.assertOpen();
    let session: Session;
    if (from instanceof Session) session = from;
    else if (from instanceof SessionHandle) session = from.session;
    else session = this.sessionFromText(from);
    return new SessionHandle<C>(this, session, this.tokens);
  }

  private sessionFromText(text: string | null | undefined): Session {
    if (text === undefined || text === null || text === '') return new Session();
    if (typeof text !== 'string') {
      throw new ConfigError(
        `withSession takes token text, a Session or a SessionHandle; got ${typeof text}.`,
      );
    }
    try {
      return Session.fromToken(this.tokens.decode(text));
    } catch (error) {
      const tokenError = toTokenError(error);
      this.counters.badTokens++;
      this.events.emit('bad-token', { cluster: this.cluster, error: tokenError });
      if (this.badToken === 'reject') throw tokenError;
      return new Session();
    }
  }

  /** Run a read where the session's writes are visible; returns the callback's value. */
  async read<T>(
    session: Session,
    fn: (connection: C) => Promise<T>,
    options: ReadOptions = {},
  ): Promise<T> {
    return (await this.readDetailed(session, fn, options)).value;
  }

  /** Like {@link Router.read}, and also says where the read went and why. */
  async readDetailed<T>(
    session: Session,
    fn: (connection: C) => Promise<T>,
    options: ReadOptions = {},
  ): Promise<RoutedRead<T>> {
    this.assertOpen();
    const started = this.clock.now();
    return this.reportingReadError(started, async () => {
      let routed = await this.readRouted(session, options, started, (decided) =>
        this.runRead(decided, fn, options),
      );
      if (this.primaryReadUnconfirmed(routed)) routed = await this.confirmPrimaryRead(routed);
      const finishing = this.finishRead(session, routed, routed.result.observed, started);
      // Most reads finish synchronously: no await, no extra turn of the microtask queue.
      const decision = finishing instanceof Promise ? await finishing : finishing;
      const { value } = routed.result;
      return routed.prediction
        ? { value, decision, prediction: routed.prediction }
        : { value, decision };
    });
  }

  /**
   * Lease a routed connection instead of passing a callback, for integrations that sit inside a
   * driver. `read`: routed by exactly the ladder of {@link Router.read} (covered replica, bounded
   * wait, primary fallback under the cap, degraded policy; one retry elsewhere when the first
   * target cannot hand over a connection). `write`: the primary, in a transaction unless
   * `transaction: false`. Release it with {@link Lease.release} when done: a write lease then
   * raises the session to its commit's position (as {@link Router.write} does), a read lease to
   * what the read observed (as {@link Router.read} does); `release(error)` records nothing.
   *
   * Revocation (`TIDEMARK_LEASE_REVOKED`, a `lease-revoked` event, `metrics().leasesRevoked`):
   * {@link Router.close}, `maxHoldMs`, or the caller's `signal` take an outstanding lease back.
   * A read lease with `transaction: true` is refused (`TIDEMARK_TRANSACTION_ON_REPLICA`).
   *
   * ```ts
   * const lease = await router.acquire(session, 'write');
   * try {
   *   await lease.connection.query('INSERT INTO orders ...');
   * } catch (error) {
   *   await lease.release(error); // rolled back, nothing recorded
   *   throw error;
   * }
   * await lease.release(); // committed; the session now holds its position
   * ```
   */
  async acquire(
    session: Session,
    kind: LeaseKind,
    options: AcquireOptions = {},
  ): Promise<Lease<C>> {
    this.assertOpen();
    if (options.maxHoldMs !== undefined) positive('maxHoldMs', options.maxHoldMs);
    if (kind === 'write') return this.acquireWrite(session, options);
    if (kind !== 'read') {
      throw new ConfigError(`acquire takes 'read' or 'write', got ${String(kind)}.`);
    }
    if (options.transaction === true) {
      throw new LeaseError(
        ErrorCode.TransactionOnReplica,
        `A read lease cannot run a transaction (cluster "${this.cluster}"): a transaction may write, and replicas and the read-only connections of primary fallbacks refuse writes. Acquire a 'write' lease for the transaction (it runs on the primary and records the commit's position), or drop transaction: true for a plain read.`,
      );
    }
    const started = this.clock.now();
    return this.reportingReadError(started, async () => {
      const routed = await this.readRouted(session, options, started, (decided) =>
        this.borrowRead(decided, options),
      ).catch((error: unknown) => {
        throw error instanceof AbortedAcquire ? error.reason : error;
      });
      const { connection, borrowed, leave } = routed.result;
      return this.grant('read', routed, connection, options, async (failure) => {
        borrowed.end(failure);
        let outcome: ReadOutcome<void, P>;
        try {
          outcome = await borrowed.outcome;
        } catch (error) {
          leave();
          // A refused grant is reported once, by acquire's own read-error.
          if (!failure?.refused) this.readError(failure?.error ?? error, started);
          if (failure !== undefined) return;
          throw this.leasedReadFailed(routed.final.route.target, error);
        }
        leave();
        await this.finishRead(session, routed, outcome.observed, started);
      });
    });
  }

  /**
   * The adapter failed a read lease's read after its holder was done (the node went away before
   * the read finished): no retry is possible, the holder already used the answer. A failure the
   * adapter calls retryable marks the node down and becomes a retryable `TIDEMARK_READ_FAILED`;
   * any other error is the holder's own and is returned as it is.
   */
  private leasedReadFailed(target: string, error: unknown): unknown {
    if (!this.isRetryable(error)) return error;
    if (target !== PRIMARY) this.monitor.reportFailure(target, error);
    return new TidemarkError(
      ErrorCode.ReadFailed,
      `The read lease on ${target} (cluster "${this.cluster}") failed before its read finished, so its answer may be incomplete and the session was not raised. Discard the answer and read again on a new lease.`,
      { retryable: true, cause: error },
    );
  }

  /** A write lease: `adapter.write` held open until release, recorded as {@link Router.write}. */
  private async acquireWrite(session: Session, options: AcquireOptions): Promise<Lease<C>> {
    const started = this.clock.now();
    const before = this.monitor.primaryPosition();
    const borrowed = borrow<C, WriteOutcome<void, P>>((fn) =>
      this.adapter.write(fn, { capture: false, transaction: options.transaction ?? true }),
    );
    const connection = await connectionOf(borrowed, options.signal);
    const route = { final: { route: { target: PRIMARY, reason: 'write' as const, stale: false } } };
    return this.grant('write', route, connection, options, async (failure) => {
      borrowed.end(failure);
      if (failure !== undefined) {
        await borrowed.outcome.catch(() => undefined);
        return;
      }
      const { position } = await borrowed.outcome;
      await this.recordWrite(session, position, started, before);
    });
  }

  /** One read attempt's connection, counted in flight until the lease ends (`leave`). */
  private async borrowRead(
    decided: Decided<P>,
    options: AcquireOptions,
  ): Promise<{ connection: C; borrowed: Borrowed<C, ReadOutcome<void, P>>; leave: () => void }> {
    const leave = this.occupy(decided.route);
    const borrowed = borrow<C, ReadOutcome<void, P>>((fn) =>
      this.adapter.read(decided.route.target, fn, readContext(decided, options)),
    );
    try {
      return { connection: await connectionOf(borrowed, options.signal), borrowed, leave };
    } catch (error) {
      leave();
      // The caller gave up: not the target's fault, and no retry.
      if (options.signal?.aborted) throw new AbortedAcquire(error);
      throw error;
    }
  }

  /** Wrap a connection into a lease the router tracks (and revokes on close). */
  private async grant(
    kind: LeaseKind,
    routed: {
      readonly final: { readonly route: Pick<LeaseRoute, 'target' | 'reason' | 'stale'> };
      readonly waitedMs?: number;
      readonly retried?: boolean;
    },
    connection: C,
    options: AcquireOptions,
    end: (failure: LeaseFailure | undefined) => Promise<void>,
  ): Promise<Lease<C>> {
    // Closed, or given up on, while the connection was on its way: give it straight back.
    if (this.closed || options.signal?.aborted) {
      const refusal = this.closed ? this.closedError() : options.signal?.reason;
      await end({ error: refusal, refused: true }).catch(() => undefined);
      throw refusal;
    }
    const { target, reason, stale } = routed.final.route;
    const lease: HeldLease<C> = new HeldLease<C>({
      kind,
      cluster: this.cluster,
      route: {
        target,
        reason,
        stale,
        waitedMs: routed.waitedMs ?? 0,
        retried: routed.retried ?? false,
      },
      connection,
      clock: this.clock,
      maxHoldMs: options.maxHoldMs,
      signal: options.signal,
      end: async (failure) => {
        try {
          await end(failure);
        } finally {
          this.leases.delete(lease);
        }
      },
      onRevoke: (why, heldMs) => {
        this.counters.leasesRevoked++;
        this.events.emit('lease-revoked', {
          cluster: this.cluster,
          kind,
          target,
          reason: why,
          heldMs,
        });
      },
    });
    this.leases.add(lease);
    return lease;
  }

  /** Runs `run`; a rejection is reported as a `read-error` event before it propagates. */
  private reportingReadError<X>(started: number, run: () => Promise<X>): Promise<X> {
    return this.events.has('read-error') ? this.reportingReadErrorOf(started, run) : run();
  }

  private async reportingReadErrorOf<X>(started: number, run: () => Promise<X>): Promise<X> {
    try {
      return await run();
    } catch (error) {
      this.readError(error, started);
      throw error;
    }
  }

  private readError(error: unknown, started: number): void {
    const durationMs = this.clock.now() - started;
    this.events.emit('read-error', { cluster: this.cluster, error, durationMs });
  }

  /**
   * The read path shared by {@link Router.read} and read leases: decide the route (decide.ts),
   * run `attempt` on it, and when it fails in a retryable way, decide once more without the
   * failed target and run `attempt` there (invariant 6). Shadow mode: the primary, with a
   * prediction of what routing would have done. Nothing is raised or counted here; see
   * {@link Router.finishRead}.
   */
  private async readRouted<X>(
    session: Session,
    options: ReadOptions,
    started: number,
    attempt: (decided: Decided<P>) => Promise<X>,
  ): Promise<Routed<P, X>> {
    if (this.shadow) return this.shadowRouted(session, options, started, attempt);
    // Positions carried from an earlier request are settled, when needed, by a probe sent after
    // now: this request began after that one's reads ended (invariant 3).
    // A session with nothing pending (most reads) skips the settling steps and their awaits.
    const unsettled = session.unsettled;
    if (unsettled) {
      const bindTicket = this.monitor.ticket();
      session.bindCarried(this.cluster, (target) =>
        this.settleObservation(session, target, bindTicket),
      );
    }
    const sticky = unsettled ? await this.settleUnlessSticky(session) : undefined;
    let token = this.resolveToken(session);
    let decided: Decided<P> | undefined;
    if (sticky !== undefined) {
      if (this.replicaCovers(sticky, token)) {
        decided = { route: { target: sticky, reason: 'replica-covered', stale: false }, token };
      } else {
        // Another node will serve it: the pending position must be known first.
        await session.settled(this.cluster);
        token = this.resolveToken(session);
      }
    }
    decided ??=
      this.decidedFromMemory(token, options) ??
      (await decide(this.rungs(session, started, options), token));
    const route = decided.route;
    const waitedMs = this.clock.now() - started;
    try {
      return { result: await attempt(decided), final: decided, waitedMs, retried: false };
    } catch (error) {
      if (!this.isRetryable(error)) throw error;
      this.noteReadFailure(route.target, error);
      let retryToken = decided.token;
      if (this.hasPending(session)) {
        // The retry may land elsewhere: what earlier reads observed must be known first.
        await session.settled(this.cluster);
        if (retryToken.kind !== 'ignored') retryToken = this.resolveToken(session);
      }
      const final = await decide(this.rungs(session, started, options), retryToken, route.target);
      try {
        return { result: await attempt(final), final, waitedMs, retried: true };
      } catch (retryError) {
        const failed = () =>
          new TidemarkError(
            ErrorCode.ReadFailed,
            `Read failed on ${route.target} and on the retry on ${final.route.target}; check that the cluster "${this.cluster}" is reachable.`,
            { retryable: true, cause: retryError },
          );
        if (!this.isRetryable(retryError)) throw failed();
        this.noteReadFailure(final.route.target, retryError);
        const last = await this.lastResortOnPrimary(route.target, final, started, options);
        if (!last) throw failed();
        try {
          return { result: await attempt(last), final: last, waitedMs, retried: true };
        } catch (lastError) {
          if (this.isRetryable(lastError)) this.noteReadFailure(PRIMARY, lastError);
          throw failed();
        }
      }
    }
  }

  /**
   * Two replicas failed one read in a row (invariant 6): several replicas going down at once,
   * faster than the monitor can see. A third replica may be down too; the primary covers every
   * position, so the read gets one last attempt there, under the fallback cap like any other
   * fallback. Undefined (the read fails) when a node that failed was the primary, fallback is
   * off, or the cap refuses.
   */
  private async lastResortOnPrimary(
    first: string,
    retry: Decided<P>,
    started: number,
    options: ReadOptions,
  ): Promise<Decided<P> | undefined> {
    if (first === PRIMARY || retry.route.target === PRIMARY || !this.fallbackLimit)
      return undefined;
    const required = retry.token.kind === 'position' ? retry.token.position : undefined;
    let route: Route;
    try {
      route = await this.fallback(
        required === undefined ? 'primary-no-replica' : 'primary-fallback',
        required,
        started,
        options.signal,
        retry.route.target,
      );
    } catch {
      return undefined;
    }
    if (route.target !== PRIMARY) {
      route.release?.();
      return undefined;
    }
    return { route, token: retry.token };
  }

  /**
   * After a routed read: raise the session to what it observed (invariant 3; not for routes that
   * keep the session: unverified history, shadow mode), count it and report the decision.
   */
  private finishRead(
    session: Session,
    routed: Routed<P, unknown>,
    observed: P | undefined,
    started: number,
  ): RouteDecision | Promise<RouteDecision> {
    const route = routed.final.route;
    const raising = route.keepSession
      ? undefined
      : this.raiseAfterRead(session, route.target, observed);
    return raising === undefined
      ? this.recordRead(routed, started)
      : raising.then(() => this.recordRead(routed, started));
  }

  /** Count a finished read and report its decision. */
  private recordRead(routed: Routed<P, unknown>, started: number): RouteDecision {
    const route = routed.final.route;
    const decision: RouteDecision = {
      cluster: this.cluster,
      target: route.target,
      reason: route.reason,
      waitedMs: routed.waitedMs,
      stale: route.stale,
      retried: routed.retried,
    };
    this.counters.record(decision);
    if (this.events.has('decision')) {
      this.events.emit('decision', { ...decision, durationMs: this.clock.now() - started });
    }
    return decision;
  }

  /**
   * Shadow mode: the read runs on the primary and never raises the session (a primary read
   * would pin later predictions to the primary's position, which no routed read requires); the
   * prediction starts with it and finishes in the background.
   */
  private async shadowRouted<X>(
    session: Session,
    options: ReadOptions,
    started: number,
    attempt: (decided: Decided<P>) => Promise<X>,
  ): Promise<Routed<P, X>> {
    const ledger = this.shadow as ShadowLedger;
    const bindTicket = this.monitor.ticket();
    session.bindCarried(this.cluster, (target) =>
      this.settleObservation(session, target, bindTicket),
    );
    const prediction = this.predict(session, started, options);
    ledger.track(prediction);
    const final: Decided<P> = {
      route: { target: PRIMARY, reason: 'shadow', stale: false, keepSession: true },
      token: NO_TOKEN,
    };
    const result = await attempt(final);
    return { result, final, waitedMs: 0, retried: false, prediction };
  }

  /**
   * What `route` mode would do with this read: the same ladder (decide.ts) over the same
   * monitor, with rungs that change nothing (no session raise or forget, no cap taken, no
   * counters) and throw where routing would throw. Never rejects.
   */
  private async predict(
    session: Session,
    started: number,
    options: ReadOptions,
  ): Promise<ShadowPrediction> {
    const naiveReplica =
      this.adapter.replicas.length === 0
        ? undefined
        : this.adapter.replicas[Math.floor(Math.random() * this.adapter.replicas.length)];
    // The replicas as routing would have seen them at the read's start, before the naive probe
    // below lands (it would turn a predicted wait into a covered read).
    const states = this.monitor.states();
    // Sent before the read itself, so it reaches the replica no later than a naive read would.
    const naiveProbe =
      naiveReplica !== undefined && this.naiveNeedsProbe(session, naiveReplica)
        ? probeFromNow(this.monitor, naiveReplica)
        : undefined;
    let required: P | undefined;
    let reason: DecisionReason | 'error';
    try {
      await session.settled(this.cluster);
      required = session.position(this.cluster, this.adapter.codec);
    } catch (error) {
      const bad = error instanceof TokenError && this.badToken === 'ignore';
      return this.prediction(
        bad ? 'bad-token-ignored' : 'error',
        undefined,
        undefined,
        naiveReplica,
      );
    }
    const token: ResolvedToken<P> =
      required === undefined ? NO_TOKEN : { kind: 'position', position: required };
    const naive =
      required !== undefined && naiveReplica !== undefined
        ? naiveWouldMiss(this.monitor, this.adapter.codec, naiveReplica, required, naiveProbe)
        : Promise.resolve(undefined);
    const waited = { ms: undefined as number | undefined };
    try {
      const rungs = this.predictionRungs(session, started, options, states, waited);
      reason = (await decide(rungs, token)).route.reason;
    } catch {
      reason = 'error';
    }
    return this.prediction(reason, waited.ms, await naive, naiveReplica);
  }

  /** A position still pending, or one the replica's sample does not cover. */
  private naiveNeedsProbe(session: Session, replica: string): boolean {
    if (session.pendingTargets(this.cluster).length > 0) return true;
    let held: P | undefined;
    try {
      held = session.position(this.cluster, this.adapter.codec);
    } catch {
      return false;
    }
    if (held === undefined) return false;
    const applied = this.monitor.state(replica)?.applied;
    return applied === undefined || this.adapter.codec.compare(applied, held) !== 'covered';
  }

  private prediction(
    reason: DecisionReason | 'error',
    waitedMs: number | undefined,
    naiveStale: boolean | undefined,
    naiveReplica: string | undefined,
  ): ShadowPrediction {
    return {
      cluster: this.cluster,
      reason,
      outcome: predictedOutcome(reason),
      waited: waitedMs !== undefined,
      waitedMs: waitedMs ?? 0,
      naiveStale,
      naiveReplica,
    };
  }

  /** `waited.ms` receives how long the wait rung ran, when it ran (as the `wait` event reports). */
  private predictionRungs(
    session: Session,
    started: number,
    options: ReadOptions,
    states: ReadonlyArray<ReplicaState<P>>,
    waited: { ms: number | undefined },
  ): Rungs<P> {
    const routed = this.rungs(session, started, options);
    const primary = (reason: FallbackReason): Route => ({ target: PRIMARY, reason, stale: false });
    const wait = this.shadowWait;
    return {
      ...routed,
      plan: (required, exclude) => this.plan(states, required, exclude, options),
      wait: wait.enabled
        ? async (required, candidates) => {
            const waitStarted = this.clock.now();
            try {
              return await wait.until(
                required,
                candidates,
                started,
                undefined,
                options.affinityKey,
              );
            } finally {
              waited.ms = (waited.ms ?? 0) + this.clock.now() - waitStarted;
            }
          }
        : undefined,
      // The cap depends on the primary's load at the time, which a prediction cannot know.
      fallback: async (reason) => primary(reason),
      otherHistory: () => {
        if (this.otherHistory === 'error') throw new Error('other-history');
        return primary('primary-other-history');
      },
      historyUnverified: () => {
        if (this.otherHistory === 'error') throw new Error('history-unverified');
        return { target: PRIMARY, reason: 'primary-history-unverified', stale: false };
      },
      impossible: () => {
        if (this.badToken === 'reject') throw new Error('impossible');
      },
    };
  }

  /** Shadow mode's predictions so far; undefined in `route` mode. */
  shadowReport(): ShadowReport | undefined {
    return this.shadow?.snapshot();
  }

  /** Resolves once every shadow prediction started so far is counted (no-op in `route` mode). */
  async shadowSettled(): Promise<void> {
    await this.shadow?.settled();
  }

  /**
   * One attempt of a read on its target, counted in flight (balanced selection) for its
   * duration; a primary fallback slot the route holds is given back when it ends.
   */
  private async runRead<T>(
    decided: Decided<P>,
    fn: (connection: C) => Promise<T>,
    options: ReadOptions,
  ): Promise<ReadOutcome<T, P>> {
    const leave = this.occupy(decided.route);
    try {
      const context = readContext(decided, options, this.observesWithRead(decided.route));
      return await this.adapter.read(decided.route.target, fn, context);
    } finally {
      leave();
    }
  }

  /**
   * Whether this read asks its adapter for the position with the read itself: only when the
   * read is settled before it returns anyway (`settle: 'immediate'`), on a replica, the adapter
   * answers it in the read's own round trip, and the read is alone on that replica. Everywhere
   * else the shared probe after the read is cheaper, or not needed at all: with company on the
   * replica one probe settles every read in flight there, where observing with each read would
   * cost the replica one more statement per read (on PostgreSQL 18 at 16 sessions on two cores
   * that slowed replay, and every writer's read waited longer).
   */
  private observesWithRead(route: Route): boolean {
    return (
      this.settleMode === 'immediate' &&
      route.target !== PRIMARY &&
      this.adapter.observesWithRead === true &&
      (this.inFlight.get(route.target) ?? 0) <= 1
    );
  }

  /**
   * Count a read in flight on its target until the returned function is called (once; later
   * calls do nothing), which also gives back the primary fallback slot the route holds.
   */
  private occupy(route: Route): () => void {
    const target = route.target;
    this.inFlight.set(target, (this.inFlight.get(target) ?? 0) + 1);
    if (target !== PRIMARY) this.readShares.note(target);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.inFlight.set(target, (this.inFlight.get(target) ?? 1) - 1);
      route.release?.();
    };
  }

  /** Counters since the router started (see {@link RouterMetrics}). */
  metrics(): ReturnType<RouterMetrics['snapshot']> & {
    /** Primary fallback reads allowed in flight now (moves with `fallback.maxConcurrent: 'auto'`). */
    fallbackLimit?: number;
    sharedView?: SharedViewStats;
  } {
    return {
      ...this.counters.snapshot(),
      ...(this.fallbackLimit && { fallbackLimit: this.fallbackLimit.max }),
      ...(this.sharedView && { sharedView: this.sharedView.stats() }),
    };
  }

  /** Revoke outstanding leases, stop the catch-up watchers and the monitor, close the adapter. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Outstanding leases first: their connections go back before the adapter's pools end.
    await Promise.all([...this.leases].map((lease) => lease.revoke('closed')));
    this.catchUp.close();
    await this.sharedView?.close();
    await this.monitor.close();
    await this.adapter.close();
  }

  private assertOpen(): void {
    if (this.closed) throw this.closedError();
  }

  private closedError(): TidemarkError {
    return new TidemarkError(ErrorCode.Closed, `Router for cluster "${this.cluster}" is closed.`);
  }

  /** Decode the session's position, applying the bad-token policy. */
  private resolveToken(session: Session): ResolvedToken<P> {
    let position: P | undefined;
    try {
      position = session.position(this.cluster, this.adapter.codec);
    } catch (error) {
      this.onBadToken(session, toTokenError(error));
      return IGNORED_TOKEN;
    }
    return position === undefined ? NO_TOKEN : { kind: 'position', position };
  }

  /** Counts a bad position; throws it under `reject`, drops it from the session under `ignore`. */
  private onBadToken(session: Session, error: TokenError): void {
    this.counters.badTokens++;
    this.events.emit('bad-token', { cluster: this.cluster, error });
    if (this.badToken === 'reject') throw error;
    // Ignored positions are dropped so they stop costing a decode and a count on every read.
    session.forget(this.cluster);
  }

  private plan(
    states: ReadonlyArray<ReplicaState<P>>,
    required: P | undefined,
    exclude: string | undefined,
    options: ReadOptions,
  ): ReadPlan<P> {
    return planRead({
      states,
      required,
      codec: this.adapter.codec,
      now: this.clock.now(),
      health: this.health,
      selection: this.selection,
      affinityKey: options.affinityKey,
      load: this.load,
      exclude,
    });
  }

  /**
   * The ladder's first rungs from memory alone, before any per-read rungs are built: a replica
   * that covers the session (or any healthy replica without a token). Undefined when the ladder
   * must go on ({@link decide}), including a position the adapter's verdict already judges lost.
   */
  private decidedFromMemory(token: ResolvedToken<P>, options: ReadOptions): Decided<P> | undefined {
    const required = token.kind === 'position' ? token.position : undefined;
    if (required !== undefined && this.lostByVerdict(required)) return undefined;
    return replicaDecision(this.plan(this.monitor.states(), required, undefined, options), token);
  }

  /** The ladder's rungs (decide.ts) for one read that started at `started`. */
  private rungs(session: Session, started: number, options: ReadOptions): Rungs<P> {
    return {
      plan: (required, exclude) => this.plan(this.monitor.states(), required, exclude, options),
      lostByVerdict: (required) => this.lostByVerdict(required),
      checkAgainstPrimary: (required) => this.checkAgainstPrimary(required),
      wait: this.boundedWait.enabled
        ? (required, candidates) =>
            this.boundedWait.until(
              required,
              candidates,
              started,
              options.signal,
              options.affinityKey,
            )
        : undefined,
      fallback: (reason, required, exclude) =>
        this.fallback(reason, required, started, options.signal, exclude),
      otherHistory: (required) => this.onOtherHistory(required),
      historyUnverified: (cause) => this.onHistoryUnverified(cause),
      impossible: () =>
        this.onBadToken(
          session,
          new TokenError(
            ErrorCode.TokenImpossible,
            `The session's position for cluster "${this.cluster}" is ahead of the primary, so it was not issued by this cluster; it may be forged or from another cluster with the same name.`,
          ),
        ),
      primaryFailed: () => {
        // The primary itself failed; a covered replica was the only other option.
        throw new TidemarkError(
          ErrorCode.ReadFailed,
          `Read failed on the primary of cluster "${this.cluster}" and no replica has this session's position.`,
          { retryable: true },
        );
      },
    };
  }

  /**
   * Is `required` part of the primary's history? Fails closed (invariant 10): when the primary
   * cannot be asked, or the adapter's check throws, the answer is {@link CheckFailed}, never `ok`.
   */
  private async checkAgainstPrimary(required: P): Promise<PrimaryVerdict | CheckFailed> {
    const sampled = this.monitor.primaryPosition();
    if (sampled !== undefined && this.adapter.codec.compare(sampled, required) === 'covered') {
      return 'ok';
    }
    return this.checkAgainstFreshPrimary(required);
  }

  /** {@link checkAgainstPrimary} without trusting the sample: the primary is probed first. */
  private async checkAgainstFreshPrimary(required: P): Promise<PrimaryVerdict | CheckFailed> {
    let fresh: P | undefined;
    try {
      fresh = await this.monitor.refreshPrimary();
    } catch (error) {
      return new CheckFailed(error);
    }
    if (fresh === undefined) return new CheckFailed(new Error('the monitor has no primary probe'));
    try {
      return await this.classify(fresh, required);
    } catch (error) {
      return new CheckFailed(error);
    }
  }

  /** A primary read served as fresh whose observed position does not cover the session's. */
  private primaryReadUnconfirmed(
    routed: Routed<P, { readonly observed?: P | undefined }>,
  ): boolean {
    const { route, token } = routed.final;
    const observed = routed.result.observed;
    return (
      route.target === PRIMARY &&
      !route.stale &&
      !route.keepSession &&
      route.reason !== 'primary-other-history' &&
      token.kind === 'position' &&
      observed !== undefined &&
      this.adapter.codec.compare(observed, token.position) !== 'covered'
    );
  }

  /**
   * A primary read served as fresh must have run on the history its verdict was about. Where the
   * adapter's primary connection follows elections by itself (MongoDB's replica-set client), the
   * read can run on a member elected after the sample the verdict trusted; the position the
   * server returned with the result then does not cover the session's (another term), and the
   * position is judged again against a fresh primary probe before the answer counts as fresh.
   * Adapters that return no `observed` for primary reads (the SQL ones: their primary connection
   * names one server) are never asked again.
   */
  private async confirmPrimaryRead<X extends { readonly observed?: P | undefined }>(
    routed: Routed<P, X>,
  ): Promise<Routed<P, X>> {
    const { token } = routed.final;
    if (token.kind !== 'position' || !this.primaryReadUnconfirmed(routed)) return routed;
    const verdict = await this.checkAgainstFreshPrimary(token.position);
    if (verdict === 'ok') return routed;
    const next =
      verdict === 'other-history'
        ? this.onOtherHistory(token.position)
        : this.onHistoryUnverified(
            verdict instanceof CheckFailed
              ? verdict.cause
              : new Error('the primary that served the read has not issued the position'),
          );
    // The read has run; only its label and what it may raise change (a slot is not held again).
    return { ...routed, final: { route: { ...next, release: undefined }, token } };
  }

  /**
   * For adapters whose `covered` is no proof of shared history (MariaDB): is the token, by the
   * adapter's verdict against the monitor's primary sample, from another history? Synchronous
   * and cheap; no sample, or an asynchronous verdict, leaves it to the usual path.
   */
  private lostByVerdict(required: P): boolean {
    if (!this.adapter.coveredNeedsVerdict || !this.adapter.classifyAgainstPrimary) return false;
    const primary = this.monitor.primaryPosition();
    if (primary === undefined) return false;
    try {
      return this.adapter.classifyAgainstPrimary(primary, required) === 'other-history';
    } catch {
      return false;
    }
  }

  /** The adapter's verdict, else the codec's: `behind` the primary means never issued here. */
  private classify(primary: P, required: P): PrimaryVerdict | Promise<PrimaryVerdict> {
    if (this.adapter.classifyAgainstPrimary) {
      return this.adapter.classifyAgainstPrimary(primary, required);
    }
    const relation = this.adapter.codec.compare(primary, required);
    if (relation === 'covered') return 'ok';
    return relation === 'other-history' ? 'other-history' : 'impossible';
  }

  private onOtherHistory(required: P): Route {
    this.counters.otherHistory++;
    this.events.emit('other-history', { cluster: this.cluster, position: required });
    const otherHistoryError = () =>
      new OtherHistoryError(this.cluster, `position ${this.adapter.codec.encode(required)}`);
    if (this.otherHistory === 'error') throw otherHistoryError();
    if (!this.otherHistoryBucket?.tryTake()) throw otherHistoryError();
    return { target: PRIMARY, reason: 'primary-other-history', stale: false };
  }

  /**
   * The history check could not answer: never serve the read as fresh, and never raise the
   * session onto the primary's history without the verdict (invariant 10).
   */
  private onHistoryUnverified(cause: unknown): Route {
    this.counters.historyUnverified++;
    this.events.emit('history-unverified', { cluster: this.cluster, error: cause });
    if (this.otherHistory === 'primary' && this.otherHistoryBucket?.tryTake()) {
      return {
        target: PRIMARY,
        reason: 'primary-history-unverified',
        stale: false,
        keepSession: true,
      };
    }
    throw new HistoryUnverifiedError(this.cluster, cause);
  }

  /**
   * Raise the session to a write's position. A held position the write does not cover is first
   * judged against the primary (invariant 4): merging a lost position with the new one would
   * either drop it in silence or, where positions of two histories merge by sequence number
   * (MariaDB), keep the lost one and route the next read to a replica without the new write.
   */
  private async raiseAfterWrite(session: Session, written: P): Promise<LostWrite | undefined> {
    const codec = this.adapter.codec;
    let held: P | undefined;
    try {
      held = session.position(this.cluster, codec);
    } catch {
      held = undefined; // An undecodable position protects nothing; the new one replaces it.
    }
    // Where `covered` is no proof of shared history (MariaDB: a new primary's sequence numbers
    // pass a lost write's), the verdict below is asked even then; it is synchronous and usually
    // answered from the monitor's sample, with no round trip.
    if (
      held === undefined ||
      (codec.compare(written, held) === 'covered' && !this.adapter.coveredNeedsVerdict)
    ) {
      session.raise(this.cluster, codec, written);
      return undefined;
    }
    // Cheap first: the monitor's primary sample plus this write usually answers it.
    const sampled = this.monitor.primaryPosition();
    const quick = sampled === undefined ? written : codec.merge(sampled, written);
    if ((await this.classifySafely(quick, held)) === 'ok') {
      this.raiseCompact(session, written, quick);
      return undefined;
    }
    let fresh: P | undefined;
    try {
      fresh = await this.monitor.refreshPrimary();
    } catch {
      fresh = undefined;
    }
    const primary = fresh === undefined ? undefined : codec.merge(fresh, written);
    const verdict = primary === undefined ? undefined : await this.classifySafely(primary, held);
    if (verdict === 'ok' && primary !== undefined) {
      this.raiseCompact(session, written, primary);
      return undefined;
    }
    session.forget(this.cluster);
    if (verdict === 'impossible') {
      // Not a lost write: a position this cluster never issued. Counted like any bad token.
      this.counters.badTokens++;
      this.events.emit('bad-token', {
        cluster: this.cluster,
        error: new TokenError(
          ErrorCode.TokenImpossible,
          `The session's position for cluster "${this.cluster}" is ahead of the primary; it was replaced by the position of the write that just succeeded.`,
        ),
      });
      session.raise(this.cluster, codec, written);
      return undefined;
    }
    // Lost (or unverifiable): the session continues from the primary's history as it is now,
    // which covers everything of it that survived and the new write.
    session.raise(this.cluster, codec, primary ?? written);
    const lostWrite: LostWrite = {
      cluster: this.cluster,
      position: codec.encode(held),
      verdict: verdict === 'other-history' ? 'other-history' : 'unverified',
    };
    this.counters.lostWrites++;
    this.events.emit('lost-write', { ...lostWrite, written });
    return lostWrite;
  }

  /**
   * Raise the session to a write whose position did not cover what it held (a set position:
   * MySQL GTIDs), compacted against `primary`, a primary position that was just found to hold
   * the session's earlier position (see {@link PositionCodec.compact}).
   */
  private raiseCompact(session: Session, written: P, primary: P): void {
    const codec = this.adapter.codec;
    session.raise(this.cluster, codec, written);
    if (!codec.compact) return;
    const current = session.position(this.cluster, codec);
    if (current !== undefined) session.raise(this.cluster, codec, codec.compact(current, primary));
  }

  private async classifySafely(primary: P, required: P): Promise<PrimaryVerdict | undefined> {
    try {
      return await this.classify(primary, required);
    } catch {
      return undefined;
    }
  }

  /**
   * Primary under the cap, else the degraded policy. The cap: a token from the bucket when one
   * is configured, then a concurrency slot, queueing up to `fallback.queueMs` for one.
   */
  private async fallback(
    reason: FallbackReason,
    required: P | undefined,
    started: number,
    signal: AbortSignal | undefined,
    exclude?: string,
  ): Promise<Route> {
    const limit = this.fallbackLimit;
    if (limit && (this.bucket === undefined || this.bucket.tryTake())) {
      if (await limit.acquire(this.fallbackQueueMs, signal)) {
        const heldSince = this.clock.now();
        return { target: PRIMARY, reason, stale: false, release: () => limit.release(heldSince) };
      }
    }
    const waitedMs = this.clock.now() - started;
    this.counters.capRejections++;
    this.events.emit('cap-rejected', { cluster: this.cluster, waitedMs });
    if (this.degraded === 'stale') {
      const best = bestEffortReplica(this.monitor.states(), exclude);
      if (best) return { target: best.id, reason: 'degraded-stale', stale: required !== undefined };
    }
    throw new ReplicasBehindError(this.cluster, this.etaMs(required), waitedMs);
  }

  private noteReadFailure(target: string, error: unknown): void {
    if (target !== PRIMARY) this.monitor.reportFailure(target, error);
    this.counters.retries++;
    this.events.emit('retry', { cluster: this.cluster, failedTarget: target, error });
  }

  private isRetryable(error: unknown): boolean {
    if (error instanceof TidemarkError) return false;
    return this.adapter.isRetryable ? this.adapter.isRetryable(error) : true;
  }

  /**
   * Invariant 3: raise to what the read observed. A position the server returned with the result
   * counts at once. Otherwise the monitor's sample from before the read is not enough (the read
   * may have seen more): the position comes from a probe of the same node sent after the read
   * finished (a node's applied position only moves forward, so it covers everything the read
   * saw), shared by every read that finished before it was sent, and taken only when needed.
   */
  private raiseAfterRead(
    session: Session,
    target: string,
    observed: P | undefined,
  ): Promise<void> | undefined {
    const codec = this.adapter.codec;
    if (observed !== undefined) {
      session.raise(this.cluster, codec, observed);
      if (target !== PRIMARY) this.monitor.observe(target, observed);
      else this.monitor.observePrimary(observed);
      return undefined;
    }
    const ticket = this.monitor.ticket();
    const pending = {
      target,
      settle: () => this.settleObservation(session, target, ticket),
    };
    if (this.settleMode === 'immediate') return pending.settle();
    session.defer(this.cluster, pending);
    return undefined;
  }

  /**
   * A write whose position was not captured (it would have cost a round trip on its connection):
   * any primary position sampled after it finished covers its commit (invariant 1), provided the
   * primary is still on the same history as before the write. If it is not, the write may have
   * been lost in a failover in between: reported as an unverified lost write.
   */
  private async settleWrite(
    session: Session,
    ticket: number,
    before: P | undefined,
  ): Promise<void> {
    let after: P;
    try {
      after = await this.monitor.primaryAfter(ticket);
    } catch (error) {
      throw new TidemarkError(
        ErrorCode.ReadFailed,
        `The position of a write on cluster "${this.cluster}" could not be settled: the primary did not answer a probe. Retry shortly; the session keeps the write pending.`,
        { retryable: true, cause: error },
      );
    }
    const codec = this.adapter.codec;
    if (before !== undefined && codec.compare(after, before) === 'other-history') {
      session.forget(this.cluster);
      session.raise(this.cluster, codec, after);
      this.counters.lostWrites++;
      this.events.emit('lost-write', {
        cluster: this.cluster,
        position: codec.encode(before),
        verdict: 'unverified',
        written: after,
      });
      return;
    }
    await this.raiseAfterWrite(session, after);
  }

  /**
   * A session's pending read positions, before it routes again: a single pending replica that is
   * still healthy and not paused can serve the next read without settling (a replica's state never goes back,
   * so reading it again is monotonic by itself); anything else is settled now.
   */
  private async settleUnlessSticky(session: Session): Promise<string | undefined> {
    const targets = session.pendingTargets(this.cluster);
    if (targets.length === 0) return undefined;
    const only = targets[0] as string;
    if (targets.length === 1 && only !== PRIMARY) {
      const state = this.monitor.state(only);
      // Not a paused replica: staying would pin the session to a state that no longer moves.
      if (
        state &&
        !state.paused &&
        isHealthy(state, this.clock.now(), this.health) &&
        !this.overFairShare(only)
      ) {
        return only;
      }
    }
    await session.settled(this.cluster);
    return undefined;
  }

  /**
   * Staying on the last replica is free (no settling probe), so sessions that carry their reads
   * stay where they first landed, and a few busy sessions can tip two replicas to 70/30. With a
   * policy that spreads reads, a replica over its even share of recent reads (by more than
   * {@link STICKY_SHARE_SLACK}) loses that privilege: its sessions settle and the policy places
   * them again (`balanced` prefers the replica with the smaller share), until the shares even
   * out; each move costs one settling probe, and only while a replica is over its share.
   */
  private overFairShare(id: string): boolean {
    if (!this.spreadsReads) return false;
    const share = this.readShares.share(id);
    const states = this.monitor.states();
    // Under the even share of all replicas is under it for any healthy subset: no count needed.
    if (share === undefined || share <= STICKY_SHARE_SLACK / states.length) return false;
    const now = this.clock.now();
    let healthy = 0;
    for (const state of states) {
      if (!state.paused && isHealthy(state, now, this.health)) healthy++;
    }
    if (healthy < 2 || share <= (1 / healthy) * STICKY_SHARE_SLACK) return false;
    // Moves are paced: the shares trail the moves, and moving every session at once overshoots.
    this.overShareStays++;
    return this.overShareStays % STICKY_MOVE_EVERY === 0;
  }

  private hasPending(session: Session): boolean {
    return session.pendingTargets(this.cluster).length > 0;
  }

  /** A healthy replica whose sampled position covers `required` (or there is none). */
  private replicaCovers(id: string, token: ResolvedToken<P>): boolean {
    const state = this.monitor.state(id);
    if (!state || !isHealthy(state, this.clock.now(), this.health)) return false;
    if (token.kind !== 'position') return true;
    const required = token.position;
    return (
      state.applied !== undefined &&
      this.adapter.codec.compare(state.applied, required) === 'covered'
    );
  }

  /**
   * The position a finished read saw, from a probe sent after `ticket`; if the node is gone, the
   * primary's position (it covers any replica that was on its history, which a routed replica
   * was: invariant 9), erring toward freshness. Bounded by the probe timeouts; never hangs.
   */
  private async settleObservation(session: Session, target: string, ticket: number): Promise<void> {
    let position: P | undefined;
    try {
      position =
        target === PRIMARY
          ? await this.monitor.primaryAfter(ticket)
          : await this.monitor.appliedAfter(target, ticket);
    } catch (error) {
      try {
        position = await this.monitor.primaryAfter(ticket);
      } catch {
        throw new TidemarkError(
          ErrorCode.ReadFailed,
          `The position a read observed on ${target} (cluster "${this.cluster}") could not be settled: neither that node nor the primary answered a probe. Retry shortly; the session keeps the read pending.`,
          { retryable: true, cause: error },
        );
      }
    }
    session.raise(this.cluster, this.adapter.codec, position);
  }

  /**
   * For a learned wait budget: how long ago the primary first held a position, from the
   * primary positions this router sees (its own writes' captured positions, the monitor's primary
   * probes) and when it first saw each. 0 for a position newer than all of them.
   */
  private positionAges(): (required: P) => number {
    const seen = new PrimarySamples<P>(this.adapter.codec, POSITION_AGE_SAMPLES);
    this.monitor.events.on('primary', (position) => seen.note(position, this.clock.now()));
    return (required) => {
      const at = seen.seenCovering(required);
      return at === undefined ? 0 : Math.max(0, this.clock.now() - at);
    };
  }

  private etaMs(required: P | undefined): number | undefined {
    if (required === undefined) return undefined;
    let best: number | undefined;
    for (const state of this.monitor.states()) {
      if (!state.reachable || state.paused || state.lagSeconds === undefined) continue;
      const eta = state.lagSeconds * 1000;
      if (best === undefined || eta < best) best = eta;
    }
    return best;
  }
}

/** Why a lease ended without recording: `refused` when it was never handed out. */
interface LeaseFailure {
  readonly error: unknown;
  readonly refused?: boolean;
}

/** What an adapter read gets to know about its route. */
function readContext<P>(
  decided: Decided<P>,
  options: ReadOptions,
  observeWithRead = false,
): ReadContext<P> {
  return {
    signal: options.signal,
    required: enforceable(decided),
    // Unless the adapter hands it over with the read for free, the position is settled from a
    // shared probe after the read (raiseAfterRead).
    observe: observeWithRead,
  };
}

/**
 * A lease acquisition the caller aborted: never retried on another target. Unwrapped to the
 * signal's reason by {@link Router.acquire}.
 */
class AbortedAcquire extends TidemarkError {
  constructor(readonly reason: unknown) {
    super(ErrorCode.ReadFailed, 'The lease was not acquired: its signal aborted.', {
      cause: reason,
    });
  }
}

function toTokenError(error: unknown): TokenError {
  if (error instanceof TokenError) return error;
  return new TokenError(
    ErrorCode.PositionInvalid,
    `Session position could not be decoded: ${String(error)}`,
    {
      cause: error,
    },
  );
}

/** Primary positions remembered for the ages a learned wait budget conditions on. */
const POSITION_AGE_SAMPLES = 256;

/** Built-in policies that promise an even spread of reads over caught-up replicas. */
const SPREADING_POLICIES: ReadonlySet<string> = new Set(['balanced', 'round-robin', 'random']);

/**
 * How far over its even share of recent reads a replica may be and still keep its sessions for
 * free: 1.1 lets two replicas drift to 55/45, inside the 40-60% a spreading policy promises.
 */
const STICKY_SHARE_SLACK = 1.1;

/**
 * Of the reads that could stay on a replica over its share, every this-many-th settles and is
 * placed again: the shares trail the moves by a few hundred reads, and moving every session at
 * once would overshoot to the other replica and back.
 */
const STICKY_MOVE_EVERY = 4;

function waitBudget(wait: RouterOptions<unknown, unknown>['wait']): WaitBudget {
  const budget = wait?.budgetMs ?? 250;
  if (budget === 'auto') {
    return new AutoBudget({
      ceilingMs: positive('wait.maxBudgetMs', wait?.maxBudgetMs ?? 250),
    });
  }
  if (wait?.maxBudgetMs !== undefined) {
    throw new ConfigError(
      "wait.maxBudgetMs is the ceiling of budgetMs: 'auto'; with a fixed budgetMs, drop it.",
    );
  }
  if (typeof budget !== 'number') {
    throw new ConfigError(`wait.budgetMs must be a number >= 0 or 'auto', got ${String(budget)}.`);
  }
  return constantBudget(nonNegative('wait.budgetMs', budget));
}

function nonNegative(name: string, value: number): number {
  if (!(Number.isFinite(value) && value >= 0))
    throw new ConfigError(`${name} must be a number >= 0, got ${value}.`);
  return value;
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0))
    throw new ConfigError(`${name} must be a number > 0, got ${value}.`);
  return value;
}

function oneOf<T extends string>(name: string, value: T, allowed: readonly T[]): T {
  if (!allowed.includes(value)) {
    throw new ConfigError(
      `${name} must be one of ${allowed.map((v) => `'${v}'`).join(', ')}, got '${String(value)}'.`,
    );
  }
  return value;
}
