import { type Adapter, PRIMARY, type PrimaryVerdict, type WriteOptions } from './adapter.js';
import { CatchUpWatchers } from './catch-up.js';
import { type Clock, systemClock } from './clock.js';
import { ConcurrencyLimit } from './concurrency-limit.js';
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
import { RouterMetrics } from './metrics.js';
import { PollingMonitor, type PollingMonitorOptions } from './monitor/polling-monitor.js';
import type { ReplicaHistory, ReplicaMonitor, ReplicaState } from './monitor/types.js';
import { bestEffortReplica, planRead, type ReadPlan } from './plan.js';
import type { PositionCodec } from './position.js';
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
import { TokenBucket, type TokenBucketOptions } from './token-bucket.js';
import { BoundedWait } from './wait.js';
import { AutoBudget, constantBudget, type WaitBudget } from './wait-budget.js';

export interface RouterOptions<P, C> {
  adapter: Adapter<P, C>;
  /** Name of this cluster inside tokens. Default `default`. */
  cluster?: string;
  /** Supply a monitor; by default a {@link PollingMonitor} over the adapter's probes. */
  monitor?: ReplicaMonitor<P>;
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
     * `'auto'`: learned per replica from the waits this router sees (the 99th percentile of
     * catch-up times with headroom while waits pay, no wait while they mostly run out), never
     * above `maxBudgetMs`; see {@link AutoBudget}.
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
     * Default 16. A healthy primary serving point reads in 1 ms passes 16,000 such reads per
     * second under it; one that takes 2 s passes 8.
     */
    maxConcurrent?: number;
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
    otherHistory?: Partial<TokenBucketOptions>;
  } & Partial<TokenBucketOptions>; // ratePerSecond, burst: no bucket unless one of them is set
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
   * read returns (same shared probe).
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
  private readonly bucket: TokenBucket | undefined;
  private readonly fallbackLimit: ConcurrencyLimit | undefined;
  private readonly fallbackQueueMs: number;
  private readonly releaseFallback = () => this.fallbackLimit?.release();
  /** Reads this router has running per target (replica id or `primary`). */
  private readonly inFlight = new Map<string, number>();
  private readonly load: ReplicaLoad = { inFlight: (id) => this.inFlight.get(id) ?? 0 };
  private readonly otherHistoryBucket: TokenBucket | undefined;
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
    const fallbackEnabled = options.fallback?.enabled ?? true;
    const bucketSet =
      options.fallback?.ratePerSecond !== undefined || options.fallback?.burst !== undefined;
    this.bucket =
      fallbackEnabled && bucketSet
        ? new TokenBucket(
            {
              ratePerSecond: options.fallback?.ratePerSecond ?? 50,
              burst: options.fallback?.burst ?? 50,
            },
            this.clock,
          )
        : undefined;
    this.fallbackLimit = fallbackEnabled
      ? new ConcurrencyLimit(options.fallback?.maxConcurrent ?? 16, this.clock)
      : undefined;
    this.fallbackQueueMs = nonNegative('fallback.queueMs', options.fallback?.queueMs ?? 250);
    this.otherHistoryBucket = fallbackEnabled
      ? new TokenBucket(
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
    this.monitor =
      options.monitor ??
      new PollingMonitor<P>({
        ...options.monitorOptions,
        codec: this.adapter.codec,
        replicas: this.adapter.replicas,
        probe: (id, context) => this.adapter.probe(id, context),
        probePrimary: (context) => this.adapter.probePrimary(context),
        classifyAgainstPrimary: this.adapter.classifyAgainstPrimary
          ? (primary, applied) => this.adapter.classifyAgainstPrimary!(primary, applied)
          : undefined,
        coveredNeedsVerdict: this.adapter.coveredNeedsVerdict,
        clock: this.clock,
      });
    this.catchUp = new CatchUpWatchers<P>({
      adapter: this.adapter,
      codec: this.adapter.codec,
      monitor: this.monitor,
      clock: this.clock,
      pollIntervalMs: positive('wait.pollIntervalMs', options.wait?.pollIntervalMs ?? 1),
    });
    this.boundedWait = new BoundedWait<P>({
      adapter: this.adapter,
      codec: this.adapter.codec,
      monitor: this.monitor,
      clock: this.clock,
      selection: this.selection,
      load: this.load,
      budget: waitBudget(options.wait),
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
      return { value, lostWrite: undefined };
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
    return { value, lostWrite };
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
    const run = this.shadow ? this.shadowRead.bind(this) : this.routeAndRead.bind(this);
    if (!this.events.has('read-error')) return run(session, fn, options, started);
    try {
      return await run(session, fn, options, started);
    } catch (error) {
      const durationMs = this.clock.now() - started;
      this.events.emit('read-error', { cluster: this.cluster, error, durationMs });
      throw error;
    }
  }

  private async routeAndRead<T>(
    session: Session,
    fn: (connection: C) => Promise<T>,
    options: ReadOptions,
    started: number,
  ): Promise<RoutedRead<T>> {
    // Positions carried from an earlier request are settled, when needed, by a probe sent after
    // now: this request began after that one's reads ended (invariant 3).
    const bindTicket = this.monitor.ticket();
    session.bindCarried(this.cluster, (target) =>
      this.settleObservation(session, target, bindTicket),
    );
    const sticky = await this.settleUnlessSticky(session);
    let token = await this.resolveToken(session);
    let decided: Decided<P> | undefined;
    if (sticky !== undefined) {
      if (this.replicaCovers(sticky, token)) {
        decided = { route: { target: sticky, reason: 'replica-covered', stale: false }, token };
      } else {
        // Another node will serve it: the pending position must be known first.
        await session.settled(this.cluster);
        token = await this.resolveToken(session);
      }
    }
    decided ??= await decide(this.rungs(session, started, options), token);
    const route = decided.route;
    const waitedMs = this.clock.now() - started;
    let retried = false;
    let outcome: { value: T; observed?: P | undefined };
    let final = decided;
    try {
      outcome = await this.runRead(decided, fn, options);
    } catch (error) {
      if (!this.isRetryable(error)) throw error;
      this.noteReadFailure(route.target, error);
      retried = true;
      let retryToken = decided.token;
      if (this.hasPending(session)) {
        // The retry may land elsewhere: what earlier reads observed must be known first.
        await session.settled(this.cluster);
        if (retryToken.kind !== 'ignored') retryToken = await this.resolveToken(session);
      }
      final = await decide(this.rungs(session, started, options), retryToken, route.target);
      try {
        outcome = await this.runRead(final, fn, options);
      } catch (retryError) {
        if (this.isRetryable(retryError)) this.noteReadFailure(final.route.target, retryError);
        throw new TidemarkError(
          ErrorCode.ReadFailed,
          `Read failed on ${route.target} and on the retry on ${final.route.target}; check that the cluster "${this.cluster}" is reachable.`,
          { retryable: true, cause: retryError },
        );
      }
    }
    const finalRoute = final.route;
    if (!finalRoute.keepSession) {
      await this.raiseAfterRead(session, finalRoute.target, outcome.observed);
    }
    const decision: RouteDecision = {
      cluster: this.cluster,
      target: finalRoute.target,
      reason: finalRoute.reason,
      waitedMs,
      stale: finalRoute.stale,
      retried,
    };
    this.counters.record(decision);
    if (this.events.has('decision')) {
      this.events.emit('decision', { ...decision, durationMs: this.clock.now() - started });
    }
    return { value: outcome.value, decision };
  }

  /**
   * Shadow mode: the read runs on the primary and never raises the session (a primary read
   * would pin later predictions to the primary's position, which no routed read requires); the
   * prediction starts with it and finishes in the background.
   */
  private async shadowRead<T>(
    session: Session,
    fn: (connection: C) => Promise<T>,
    options: ReadOptions,
    started: number,
  ): Promise<RoutedRead<T>> {
    const ledger = this.shadow as ShadowLedger;
    const bindTicket = this.monitor.ticket();
    session.bindCarried(this.cluster, (target) =>
      this.settleObservation(session, target, bindTicket),
    );
    const prediction = this.predict(session, started, options);
    ledger.track(prediction);
    const { value } = await this.runRead(
      { route: { target: PRIMARY, reason: 'shadow', stale: false }, token: NO_TOKEN },
      fn,
      options,
    );
    const decision: RouteDecision = {
      cluster: this.cluster,
      target: PRIMARY,
      reason: 'shadow',
      waitedMs: 0,
      stale: false,
      retried: false,
    };
    this.counters.record(decision);
    if (this.events.has('decision')) {
      this.events.emit('decision', { ...decision, durationMs: this.clock.now() - started });
    }
    return { value, decision, prediction };
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
  ): Promise<{ value: T; observed?: P | undefined }> {
    const route = decided.route;
    const target = route.target;
    this.inFlight.set(target, (this.inFlight.get(target) ?? 0) + 1);
    try {
      return await this.adapter.read(target, fn, {
        signal: options.signal,
        required: enforceable(decided),
        // The position is settled from a shared probe after the read (raiseAfterRead).
        observe: false,
      });
    } finally {
      this.inFlight.set(target, (this.inFlight.get(target) ?? 1) - 1);
      route.release?.();
    }
  }

  /** Counters since the router started (see {@link RouterMetrics}). */
  metrics(): ReturnType<RouterMetrics['snapshot']> {
    return this.counters.snapshot();
  }

  /** Stop the catch-up watchers and the monitor, and close the adapter. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.catchUp.close();
    await this.monitor.close();
    await this.adapter.close();
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new TidemarkError(ErrorCode.Closed, `Router for cluster "${this.cluster}" is closed.`);
    }
  }

  /** Decode the session's position, applying the bad-token policy. */
  private async resolveToken(session: Session): Promise<ResolvedToken<P>> {
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
    if (held === undefined || codec.compare(written, held) === 'covered') {
      session.raise(this.cluster, codec, written);
      return undefined;
    }
    // Cheap first: the monitor's primary sample plus this write usually answers it.
    const sampled = this.monitor.primaryPosition();
    const quick = sampled === undefined ? written : codec.merge(sampled, written);
    if ((await this.classifySafely(quick, held)) === 'ok') {
      session.raise(this.cluster, codec, written);
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
    if (verdict === 'ok') {
      session.raise(this.cluster, codec, written);
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
        return { target: PRIMARY, reason, stale: false, release: this.releaseFallback };
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
  private async raiseAfterRead(
    session: Session,
    target: string,
    observed: P | undefined,
  ): Promise<void> {
    const codec = this.adapter.codec;
    if (observed !== undefined) {
      session.raise(this.cluster, codec, observed);
      if (target !== PRIMARY) this.monitor.observe(target, observed);
      else this.monitor.observePrimary(observed);
      return;
    }
    const ticket = this.monitor.ticket();
    const pending = {
      target,
      settle: () => this.settleObservation(session, target, ticket),
    };
    if (this.settleMode === 'immediate') {
      await pending.settle();
      return;
    }
    session.defer(this.cluster, pending);
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
      if (state && !state.paused && isHealthy(state, this.clock.now(), this.health)) return only;
    }
    await session.settled(this.cluster);
    return undefined;
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
