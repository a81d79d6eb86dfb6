/**
 * Leases: a routed connection held across calls instead of inside one callback, so that an
 * integration can sit inside a driver (a query builder's connection provider, an ORM's driver
 * adapter) rather than around the user's code. The router decides where a lease goes with the
 * same ladder as `Router.read` and `Router.write`; this module holds the lease itself: the
 * guarded connection, release and revocation.
 */
import type { Clock } from './clock.js';
import type { DecisionReason } from './decision.js';
import { ErrorCode, TidemarkError, type TidemarkErrorOptions } from './errors.js';
import { untilAborted } from './until-aborted.js';

/** `read`: routed like `Router.read`. `write`: the primary, position captured on release. */
export type LeaseKind = 'read' | 'write';

/** Options of {@link Router.acquire} and `SessionHandle.acquire`. */
export interface AcquireOptions {
  /** Stable key (user or session id) for the `affinity` selection policy (read leases). */
  affinityKey?: string | undefined;
  /**
   * Aborting before the lease is granted makes `acquire` reject with the signal's reason (a
   * connection the adapter hands over afterwards goes straight back). Aborting while the lease
   * is held revokes it (`reason: 'aborted'`).
   */
  signal?: AbortSignal | undefined;
  /**
   * Write leases: run the lease's statements in one transaction the adapter opens, commits on
   * `release()` and rolls back on `release(error)`. Default true. Without it each statement
   * commits on its own and the position is taken on release.
   *
   * Read leases: `true` is refused with a {@link LeaseError} `TIDEMARK_TRANSACTION_ON_REPLICA`
   * rather than quietly sent to the primary: a transaction may write, a replica (and the
   * read-only connection of a primary fallback) cannot, and only a write lease records what it
   * commits. Acquire a `write` lease for transactions.
   */
  transaction?: boolean | undefined;
  /**
   * Revoke the lease when it is held longer than this many milliseconds (`reason: 'max-hold'`):
   * its connection goes back to the pool, a write lease's transaction is rolled back, and
   * `release()` then rejects with `TIDEMARK_LEASE_REVOKED`. Default: no limit.
   */
  maxHoldMs?: number | undefined;
}

/** Codes a {@link LeaseError} carries. */
export type LeaseErrorCode =
  | typeof ErrorCode.LeaseReleased
  | typeof ErrorCode.LeaseRevoked
  | typeof ErrorCode.TransactionOnReplica;

/**
 * Misuse or loss of a lease: its connection used after `release()`
 * (`TIDEMARK_LEASE_RELEASED`), the lease taken back by the router (`TIDEMARK_LEASE_REVOKED`), or
 * a transaction asked of a read lease (`TIDEMARK_TRANSACTION_ON_REPLICA`). Never retryable as
 * such: acquire a new lease.
 */
export class LeaseError extends TidemarkError {
  declare readonly code: LeaseErrorCode;

  constructor(code: LeaseErrorCode, message: string, options?: TidemarkErrorOptions) {
    super(code, message, options);
  }
}

/** Why the router took a lease back. */
export type LeaseRevokeReason = 'closed' | 'max-hold' | 'aborted';

/** Lifecycle of a lease. */
export type LeaseState = 'held' | 'released' | 'revoked';

/** Where a lease went and why (for read leases, the fields of a `RouteDecision`). */
export interface LeaseRoute {
  /** `primary` or a replica id. */
  readonly target: string;
  /** Why the lease went to `target`: a read's route reason, or `write`. */
  readonly reason: DecisionReason | 'write';
  /** True when a read lease may lack the session's own writes (degraded `stale`). */
  readonly stale: boolean;
  /** Time routing spent before the connection was asked for (waits, fallback queue). */
  readonly waitedMs: number;
  /** True when the first target failed to hand over a connection and the lease was routed again. */
  readonly retried: boolean;
}

/**
 * A routed connection held until {@link Lease.release}. Obtain one with `router.acquire(session,
 * kind)` or `handle.acquire(kind)`; always release it (in a `finally`), passing the error when
 * the work failed.
 */
export interface Lease<C> extends LeaseRoute {
  readonly kind: LeaseKind;
  readonly cluster: string;
  /**
   * The adapter's connection (a pg `PoolClient`, a mysql2 `PoolConnection`, ...), guarded: after
   * release or revocation every property access and method call throws a {@link LeaseError}.
   * Objects its methods return are not guarded. Never release or end the driver connection
   * yourself: the adapter gives it back when the lease ends.
   */
  readonly connection: C;
  readonly state: LeaseState;
  /**
   * End the lease and give the connection back.
   *
   * `release()`: a write lease commits (when it runs a transaction) and its position goes into
   * the session, exactly as after `router.write`; the promise rejects when the commit fails
   * (nothing is recorded then). A read lease raises the session to what the read observed, as
   * after `router.read`.
   *
   * `release(error)` (any value but `undefined`): the work failed. A write lease's transaction is rolled back and nothing is
   * recorded, so the token stays as it was (statements of a lease without a transaction may have
   * committed and are not in the token: use transactions). A read lease records nothing. The
   * promise resolves once the connection is back; it does not re-throw `error`.
   *
   * Releasing again is a no-op that returns the first release's promise. After the router
   * revoked the lease, `release()` rejects with `TIDEMARK_LEASE_REVOKED`, so a write that was
   * rolled back is never taken for a committed one.
   */
  release(error?: unknown): Promise<void>;
}

/** @internal What the router gives a lease to run; see {@link HeldLease}. */
export interface HeldLeaseOptions<C> {
  readonly kind: LeaseKind;
  readonly cluster: string;
  readonly route: LeaseRoute;
  readonly connection: C;
  readonly clock: Clock;
  readonly maxHoldMs?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  /**
   * Hand the connection back and record what the lease did; `failure` set: record nothing.
   * Rejects when recording failed (a commit, a read that failed on the way back).
   */
  readonly end: (failure: { readonly error: unknown } | undefined) => Promise<void>;
  readonly onRevoke: (reason: LeaseRevokeReason, heldMs: number) => void;
}

/** @internal The router's lease. */
export class HeldLease<C> implements Lease<C> {
  readonly kind: LeaseKind;
  readonly cluster: string;
  readonly connection: C;
  readonly target: string;
  readonly reason: DecisionReason | 'write';
  readonly stale: boolean;
  readonly waitedMs: number;
  readonly retried: boolean;
  private status: LeaseState = 'held';
  private ending: Promise<void> | undefined;
  private revokedBecause: LeaseRevokeReason | undefined;
  private readonly timer = new AbortController();
  private readonly heldSince: number;
  private readonly onAbort = () => void this.revoke('aborted');

  constructor(private readonly options: HeldLeaseOptions<C>) {
    this.kind = options.kind;
    this.cluster = options.cluster;
    this.target = options.route.target;
    this.reason = options.route.reason;
    this.stale = options.route.stale;
    this.waitedMs = options.route.waitedMs;
    this.retried = options.route.retried;
    this.heldSince = options.clock.now();
    this.connection = guard(options.connection, () => this.assertUsable());
    const { maxHoldMs, signal } = options;
    if (maxHoldMs !== undefined) {
      void options.clock.sleep(maxHoldMs, this.timer.signal).then(() => {
        if (!this.timer.signal.aborted) void this.revoke('max-hold');
      });
    }
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  get state(): LeaseState {
    return this.status;
  }

  release(error?: unknown): Promise<void> {
    if (this.status === 'revoked') {
      const revoked = this.revokedError();
      return (this.ending ?? Promise.resolve()).then(() => Promise.reject(revoked));
    }
    if (this.ending) return this.ending;
    this.status = 'released';
    this.stopTimers();
    this.ending = this.options.end(error === undefined ? undefined : { error });
    return this.ending;
  }

  /**
   * @internal Take the lease back (router closing, `maxHoldMs`, abort): the connection goes back,
   * nothing is recorded. Resolves once the connection is back; never rejects. No-op once ended.
   */
  revoke(reason: LeaseRevokeReason): Promise<void> {
    if (this.status !== 'held') return (this.ending ?? Promise.resolve()).catch(() => undefined);
    this.status = 'revoked';
    this.revokedBecause = reason;
    this.stopTimers();
    this.options.onRevoke(reason, this.options.clock.now() - this.heldSince);
    this.ending = this.options.end({ error: this.revokedError() }).catch(() => undefined);
    return this.ending;
  }

  private stopTimers(): void {
    this.timer.abort();
    this.options.signal?.removeEventListener('abort', this.onAbort);
  }

  private assertUsable(): void {
    if (this.status === 'held') return;
    if (this.status === 'revoked') throw this.revokedError();
    throw new LeaseError(
      ErrorCode.LeaseReleased,
      `The connection of this ${this.kind} lease on cluster "${this.cluster}" was used after release(): it may already serve someone else. Acquire a new lease for more queries, and release only after the last query has finished.`,
    );
  }

  private revokedError(): LeaseError {
    const why = {
      closed: 'because the router was closed',
      'max-hold': `after it was held longer than maxHoldMs (${this.options.maxHoldMs} ms)`,
      aborted: 'because its signal aborted',
    }[this.revokedBecause ?? 'closed'];
    const lost =
      this.kind === 'write'
        ? ' Its transaction was rolled back and nothing was recorded in the session: re-run the write on a new lease (statements of a lease without a transaction may have committed).'
        : ' Nothing was recorded in the session: re-run the read on a new lease.';
    const advice =
      this.revokedBecause === 'max-hold'
        ? ' Release leases as soon as their work is done, or raise maxHoldMs.'
        : '';
    return new LeaseError(
      ErrorCode.LeaseRevoked,
      `This ${this.kind} lease on cluster "${this.cluster}" was revoked ${why}; its connection went back to the pool.${lost}${advice}`,
    );
  }
}

/**
 * `connection` behind a proxy that runs `check` before every property access, assignment and
 * method call (methods run with the real connection as `this`). `then` is left alone so that a
 * promise resolving with the connection does not throw. Non-objects are returned as they are.
 */
function guard<C>(connection: C, check: () => void): C {
  if (connection === null || (typeof connection !== 'object' && typeof connection !== 'function')) {
    return connection;
  }
  const methods = new WeakMap<object, unknown>();
  return new Proxy(connection as object, {
    get(target, key) {
      if (key !== 'then') check();
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function' || key === 'constructor') return value;
      let method = methods.get(value);
      if (method === undefined) {
        method = function (this: unknown, ...args: unknown[]) {
          check();
          return Reflect.apply(value, target, args);
        };
        methods.set(value, method);
      }
      return method;
    },
    set(target, key, value) {
      check();
      return Reflect.set(target, key, value, target);
    },
  }) as C;
}

/** @internal A callback-shaped adapter call (`adapter.read`, `adapter.write`) held open. */
export interface Borrowed<C, R> {
  /** The connection once the adapter calls back; rejects when the adapter fails before that. */
  readonly connection: Promise<C>;
  /** What the adapter call returns once the callback has ended. */
  readonly outcome: Promise<R>;
  /** End the callback: resolve it, or reject it with `failure.error`. Later calls do nothing. */
  end(failure?: { readonly error: unknown }): void;
}

/**
 * @internal Run `call` with a callback that hands its connection out and stays pending until
 * {@link Borrowed.end}: the adapter's own code (BEGIN, COMMIT and the capture, ROLLBACK, giving
 * the connection back) runs unchanged around a connection used outside the callback.
 */
export function borrow<C, R>(
  call: (fn: (connection: C) => Promise<void>) => Promise<R>,
): Borrowed<C, R> {
  let endCallback!: (failure?: { readonly error: unknown }) => void;
  const callbackDone = new Promise<void>((resolve, reject) => {
    endCallback = (failure) => (failure === undefined ? resolve() : reject(failure.error));
  });
  callbackDone.catch(() => undefined); // observed by the adapter, if it ever calls back
  let handOut!: (connection: C) => void;
  let failEarly!: (error: unknown) => void;
  const connection = new Promise<C>((resolve, reject) => {
    handOut = resolve;
    failEarly = reject;
  });
  const outcome = new Promise<R>((resolve) =>
    resolve(
      call((handed) => {
        handOut(handed);
        return callbackDone;
      }),
    ),
  );
  outcome.then(
    () => failEarly(new Error('the adapter returned without calling back')),
    (error: unknown) => failEarly(error),
  );
  return { connection, outcome, end: (failure) => endCallback(failure) };
}

/**
 * @internal The borrowed connection, unless `signal` aborts first: the borrow is then ended
 * (a connection handed over later goes straight back) and this rejects with the signal's reason.
 */
export function connectionOf<C, R>(
  borrowed: Borrowed<C, R>,
  signal: AbortSignal | undefined,
): Promise<C> {
  if (signal === undefined) return borrowed.connection;
  const abandon = () => {
    borrowed.end({ error: signal.reason });
    borrowed.outcome.catch(() => undefined);
  };
  if (signal.aborted) {
    abandon();
    return Promise.reject(signal.reason);
  }
  // Registered before untilAborted's own listener, so the borrow ends before the caller hears.
  signal.addEventListener('abort', abandon, { once: true });
  return untilAborted(
    borrowed.connection.finally(() => signal.removeEventListener('abort', abandon)),
    signal,
  );
}
