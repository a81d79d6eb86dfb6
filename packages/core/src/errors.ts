/**
 * Stable error codes. Codes never change meaning once released; messages may improve.
 * Match on `error.code`, not on the message.
 */
export const ErrorCode = {
  /** Token text is not a Tidemark token (bad prefix, bad characters, bad structure). */
  TokenMalformed: 'TIDEMARK_TOKEN_MALFORMED',
  /** Token text is longer than the configured limit. */
  TokenTooLarge: 'TIDEMARK_TOKEN_TOO_LARGE',
  /** Token was issued by a newer or unknown format version. */
  TokenVersion: 'TIDEMARK_TOKEN_VERSION',
  /** Token signature does not verify with any configured key (forged or altered). */
  TokenSignature: 'TIDEMARK_TOKEN_SIGNATURE',
  /** Signing keys are configured and required, but the token carries no signature. */
  TokenUnsigned: 'TIDEMARK_TOKEN_UNSIGNED',
  /** Token is older than the configured maximum age. */
  TokenExpired: 'TIDEMARK_TOKEN_EXPIRED',
  /** A position inside a token (or handed to a codec) is not valid for the adapter. */
  PositionInvalid: 'TIDEMARK_POSITION_INVALID',
  /** Token requires a position the primary has not reached: it cannot be genuine. */
  TokenImpossible: 'TIDEMARK_TOKEN_IMPOSSIBLE',
  /** Token belongs to another replication history (a write lost in a failover). */
  OtherHistory: 'TIDEMARK_OTHER_HISTORY',
  /**
   * Whether the session's position belongs to the current history could not be checked in time
   * (the primary did not answer). Never served as fresh; retry shortly.
   */
  HistoryUnverified: 'TIDEMARK_HISTORY_UNVERIFIED',
  /** No replica has caught up within the wait budget and the primary fallback cap is spent. */
  ReplicasBehind: 'TIDEMARK_REPLICAS_BEHIND',
  /** The read failed on its target and on the retry. */
  ReadFailed: 'TIDEMARK_READ_FAILED',
  /** Invalid configuration passed to a Tidemark constructor. */
  Config: 'TIDEMARK_CONFIG',
  /**
   * The session holds a position a read observed that is not settled yet, and was asked for its
   * token synchronously. Await `session.settled()` first (carriers do).
   */
  Unsettled: 'TIDEMARK_UNSETTLED',
  /** The router or monitor was closed. */
  Closed: 'TIDEMARK_CLOSED',
  /** `currentSession()` was called outside `runWithSession`. */
  NoSessionContext: 'TIDEMARK_NO_SESSION_CONTEXT',
  /** A lease's connection was used, or the lease released again, after `release()`. */
  LeaseReleased: 'TIDEMARK_LEASE_RELEASED',
  /**
   * A lease was taken back before its holder released it (the router closed, `maxHoldMs`
   * passed, or the caller's signal aborted): its connection went back, a write lease's work was
   * rolled back (or, without a transaction, not recorded in the session).
   */
  LeaseRevoked: 'TIDEMARK_LEASE_REVOKED',
  /** A read lease was asked for with `transaction: true`; transactions need a write lease. */
  TransactionOnReplica: 'TIDEMARK_TRANSACTION_ON_REPLICA',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * Codes adapters add for failures only they can see (for example `TIDEMARK_PG_ROLLED_BACK`).
 * They share the prefix so one `code.startsWith('TIDEMARK_')` check finds every Tidemark error.
 */
export type AdapterErrorCode = `TIDEMARK_${string}`;

export interface TidemarkErrorOptions {
  /** True when the same call may succeed if retried later (for example replicas catching up). */
  retryable?: boolean;
  cause?: unknown;
}

/** Base class of every error Tidemark throws on purpose. */
export class TidemarkError extends Error {
  readonly code: ErrorCode | AdapterErrorCode;
  readonly retryable: boolean;

  constructor(
    code: ErrorCode | AdapterErrorCode,
    message: string,
    options: TidemarkErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** A token or position from outside failed validation. Never retryable: the input is wrong. */
export class TokenError extends TidemarkError {}

/** Bad configuration. Thrown at construction time so mistakes surface at startup. */
export class ConfigError extends TidemarkError {
  constructor(message: string) {
    super(ErrorCode.Config, message);
  }
}

/**
 * Degraded mode 'error': no replica can serve the session's position in time and the primary
 * fallback cap is exhausted. Retry after `etaMs` when known.
 */
export class ReplicasBehindError extends TidemarkError {
  /** Estimated milliseconds until a replica catches up, when the monitor can tell. */
  readonly etaMs: number | undefined;
  readonly cluster: string;

  constructor(cluster: string, etaMs: number | undefined, waitedMs: number) {
    const eta = etaMs === undefined ? 'unknown' : `about ${Math.ceil(etaMs)} ms`;
    super(
      ErrorCode.ReplicasBehind,
      `No replica of cluster "${cluster}" has applied this session's writes (waited ${Math.round(waitedMs)} ms) and the primary fallback cap is exhausted. Retry later (ETA ${eta}), raise the cap (fallback.maxConcurrent, or fallback.ratePerSecond and burst when you set them), or choose degraded: 'stale'.`,
      { retryable: true },
    );
    this.etaMs = etaMs;
    this.cluster = cluster;
  }
}

/** The token requires a write that the current history does not contain (lost in a failover). */
export class OtherHistoryError extends TidemarkError {
  readonly cluster: string;

  constructor(cluster: string, detail: string) {
    super(
      ErrorCode.OtherHistory,
      `The session's position for cluster "${cluster}" belongs to another replication history (${detail}); a write it depends on was probably lost in a failover. Re-read the data from the primary and start a fresh session, or set otherHistory: 'primary'.`,
    );
    this.cluster = cluster;
  }
}

/**
 * No replica covers the session's position and the primary could not confirm that the position
 * is on its history (the check timed out or failed). Serving the read anyway could show a state
 * without the session's write, or hide that the write was lost, so it is refused (invariant 10).
 * Retryable: the check usually answers again within seconds.
 */
export class HistoryUnverifiedError extends TidemarkError {
  readonly cluster: string;

  constructor(cluster: string, cause?: unknown) {
    super(
      ErrorCode.HistoryUnverified,
      `The primary of cluster "${cluster}" did not answer the check of this session's position, so the read cannot be served as fresh. Retry shortly; if it persists, check the primary's health (a failover may be under way), or set otherHistory: 'primary' to read the primary without trusting the position.`,
      { retryable: true, cause },
    );
    this.cluster = cluster;
  }
}

export function isTidemarkError(value: unknown): value is TidemarkError {
  return value instanceof TidemarkError;
}
