// What the campaign records. The checker reads only these records, so it can be tested on
// hand-built histories.

/** How a failed operation is classed. Only successful reads are checked for anomalies. */
export type ErrorClass =
  /** A typed, retryable Tidemark error or a lost connection during a fault: availability. */
  | 'availability'
  /** The session was told its position belongs to another history (a lost write). */
  | 'other-history'
  /** The operation did not finish within the campaign's per-operation bound. */
  | 'timeout'
  /** Anything else: printed with its code, never silently dropped. */
  | 'unexpected';

/** One operation of one app session, as the app saw it. Times are ms since the campaign start. */
export interface Operation {
  readonly session: number;
  /** Position in the session's own sequence (sessions run one operation at a time). */
  readonly index: number;
  readonly kind: 'write' | 'read';
  readonly start: number;
  readonly end: number;
  /** The app configuration (router generation) that served it. */
  readonly generation: number;
  /** Write: the id of the row it inserted (unique in the campaign). */
  readonly writeId?: number;
  /** Read: ids of the session's rows it returned, newest first (at most READ_LIMIT). */
  readonly rows?: readonly number[];
  readonly ok: boolean;
  readonly errorClass?: ErrorClass;
  readonly errorCode?: string;
  readonly errorMessage?: string;
  /**
   * The session was told that an earlier write of its own was lost: an OtherHistoryError on a
   * read, or a write whose outcome carried `lostWrite`.
   */
  readonly lostReport?: 'other-history' | 'lost-write';
  /** The verdict of a `lostWrite` outcome (`other-history`, or `unverified` when unchecked). */
  readonly lostVerdict?: string;
  /** Route decision of a successful read. */
  readonly target?: string;
  readonly reason?: string;
  /** Encoded token text before and after the operation (undefined: no token). */
  readonly tokenBefore?: string | undefined;
  readonly tokenAfter?: string | undefined;
  /** The cluster's position inside those tokens, as the adapter's codec writes it. */
  readonly positionBefore?: string | undefined;
  readonly positionAfter?: string | undefined;
}

/**
 * One promotion. `absent` lists the ids of every write that had finished (acknowledged or not)
 * before the promotion and is missing from the new primary, checked with a direct query.
 */
export interface Failover {
  readonly index: number;
  readonly kind: string;
  readonly oldPrimary: string;
  readonly promoted: string;
  /** When the old primary went away (killed or stopped). */
  readonly crashAt: number;
  /** When the app's new configuration (router) was in service. */
  readonly readyAt: number;
  readonly absent: readonly number[];
}

/** Everything the checker needs. */
export interface History {
  readonly operations: readonly Operation[];
  readonly failovers: readonly Failover[];
  /** Ids of finished writes missing from the primary at the end (direct query). */
  readonly finalAbsent: readonly number[];
}

/**
 * Reads return at most this many rows (newest first): the conformance workload's `ordersOf`
 * contract. The checker only judges ids inside the window a read could show.
 */
export const READ_LIMIT = 20;
