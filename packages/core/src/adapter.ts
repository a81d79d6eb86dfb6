import type { ProbeContext, ProbeResult } from './monitor/types.js';
import type { PositionCodec } from './position.js';

/** Target id of the primary in route decisions; replica ids may not use it. */
export const PRIMARY = 'primary';

/** Options a caller passes to a write; adapters read what applies to them. */
export interface WriteOptions {
  /**
   * Run `fn` inside a transaction the adapter opens and commits (and rolls back on error).
   * Default true: adapters then capture the position together with the commit.
   */
  transaction?: boolean;
  /**
   * False (what `Router.write` passes): a capture that would cost a round trip on the write's
   * connection may be skipped, returning no `position`; the router then settles it from a
   * primary probe sent after the write, shared by every write that finished before it
   * (invariant 1). Free captures (OK packets, replies, a capture pipelined with COMMIT) are
   * returned anyway. Undefined or true: always capture.
   */
  capture?: boolean;
}

export interface ReadContext<P = unknown> {
  /** Aborted when the caller gives up; adapters should cancel the query where they can. */
  readonly signal?: AbortSignal | undefined;
  /**
   * The session position this read must see: undefined when the session has none (or it was
   * ignored by policy) and for reads labelled stale. Adapters whose server can enforce it on the
   * read itself (MongoDB `afterClusterTime`) may pass it on; the router has already chosen a
   * target that covers it, so enforcing it never adds a wait there.
   */
  readonly required?: P | undefined;
  /**
   * False (what the router passes): do not spend a round trip observing the position after the
   * read; the router settles it from a later probe of the same node, shared by many reads.
   * Return `observed` anyway when the server handed it over for free (MongoDB `operationTime`).
   * Undefined or true: observe on the read's connection as before.
   */
  readonly observe?: boolean | undefined;
}

/** What an adapter returns from a read. */
export interface ReadOutcome<T, P> {
  readonly value: T;
  /**
   * A position at least as new as the state the read observed, taken on the same connection
   * after the read (or returned with the result). Raises the session token (invariant 3).
   */
  readonly observed?: P;
}

/** What an adapter returns from a write. */
export interface WriteOutcome<T, P> {
  readonly value: T;
  /**
   * Position captured after the commit was acknowledged, on the committing connection.
   * Undefined only when the caller passed `capture: false` and capturing was not free.
   */
  readonly position: P | undefined;
}

/** A write whose position was captured (every write unless `capture: false` was passed). */
export type CapturedWrite<T, P> = WriteOutcome<T, P> & { readonly position: P };

/** How a session position relates to the primary's history. */
export type PrimaryVerdict = 'ok' | 'impossible' | 'other-history';

/** Result of a bounded server-side wait on one replica. */
export type WaitOutcome<P> =
  | { readonly outcome: 'reached'; readonly applied?: P }
  | { readonly outcome: 'timeout' }
  | { readonly outcome: 'other-history' }
  /** This replica cannot wait server-side (older server version): the router polls instead. */
  | { readonly outcome: 'unsupported' };

/**
 * What a database adapter supplies to the router. `C` is the connection or session type the
 * caller's callbacks receive (a pg client, a mysql2 connection, a MongoDB session handle).
 * Core never looks inside `C` or `P`.
 */
export interface Adapter<P, C> {
  readonly codec: PositionCodec<P>;
  /** Replica ids, in the order selection policies see them. Must not include `primary`. */
  readonly replicas: readonly string[];
  /**
   * Run `fn` on a connection to `target` (`primary` or a replica id) in read-only mode,
   * and report the position the read observed.
   */
  read<T>(
    target: string,
    fn: (connection: C) => Promise<T>,
    context: ReadContext<P>,
  ): Promise<ReadOutcome<T, P>>;
  /** Run `fn` on the primary and capture the position after the commit. Never retried. */
  write<T>(fn: (connection: C) => Promise<T>, options: WriteOptions): Promise<WriteOutcome<T, P>>;
  /** Applied position and lag of one replica, in one cheap round trip. */
  probe(replicaId: string, context: ProbeContext<P>): Promise<ProbeResult<P>>;
  /**
   * The replica's applied position alone, as cheaply as the server reports it. Optional: when
   * present, the router settles reads and watches catch-ups with it, and keeps `probe` (pause
   * state, lag) for the monitor's own sampling. Worth offering where `probe` gathers facts that
   * cost the server more than the position (MySQL's `performance_schema` joins: 200-260 µs per
   * probe against 80-110 µs for the position alone, measured on 9.7).
   */
  observe?: ((replicaId: string, context: { signal: AbortSignal }) => Promise<P>) | undefined;
  /**
   * True when `read` on a replica, asked to observe (`observe: true`), returns `observed` without
   * another round trip: the position query travels behind the read's own statements and is
   * answered with them (PostgreSQL with node-postgres pipelining). The router then asks for it
   * wherever it settles a read before the read returns (`settle: 'immediate'`) and the read is
   * alone on its replica, instead of probing the replica after the read. Optional, default
   * false: a read that had to observe with a round trip of its own would cost more than the
   * shared probe it replaces. Read at call time.
   */
  readonly observesWithRead?: boolean | undefined;
  /** Current position of the primary. */
  probePrimary(context: { signal: AbortSignal }): Promise<P>;
  /**
   * Block on the replica until it applies `position` or `timeoutMs` passes, server-side where
   * the database can (WAIT FOR LSN, WAIT_FOR_EXECUTED_GTID_SET, MASTER_GTID_WAIT). Optional: the
   * router polls `probe` when it is missing or answers `unsupported` for a replica.
   */
  waitFor?:
    | ((
        replicaId: string,
        position: P,
        timeoutMs: number,
        context: { signal: AbortSignal },
      ) => Promise<WaitOutcome<P>>)
    | undefined;
  /**
   * How long a bounded wait watches a replica with fast probes before it asks the server to wait
   * (`waitFor`). Optional, default 0 (the server waits at once). For servers whose wait wakes
   * later than a sub-millisecond probe finds the same position (PostgreSQL 19's WAIT FOR LSN on
   * a busy machine), so that waits of about one replay lag end at probe speed and only longer
   * ones (replay paused or far behind) hold one server-side wait instead of probing throughout.
   * Read at call time.
   */
  readonly probeBeforeWaitMs?: number | undefined;
  /**
   * Decide whether a position the primary does not cover was lost in a failover
   * (`other-history`) or never issued by this cluster (`impossible`). Optional: by default the
   * codec's comparison with the primary decides (`behind` means impossible). Adapters whose
   * positions cannot show history on their own (MySQL GTID sets, where only the primary's
   * server UUID tells the two apart) supply it. It may answer asynchronously when the verdict
   * needs a look at the primary (MongoDB: is the token's oplog entry still in the primary's
   * oplog after an election?).
   *
   * The monitor asks the same question of each replica's applied position, against a primary
   * sample that may be older than the replica's own sample: there `impossible` reads as "ahead of
   * the sample" and the replica stays readable. So when a position both lacks something the
   * primary can never get and is ahead of the primary's own numbering, the answer must be
   * `other-history`: a replica that kept a write lost in a failover and then followed the new
   * primary holds exactly that, and would otherwise serve the lost write as fresh.
   */
  classifyAgainstPrimary?:
    | ((primary: P, required: P) => PrimaryVerdict | Promise<PrimaryVerdict>)
    | undefined;
  /**
   * True when the codec's `covered` is no proof of shared history, so `classifyAgainstPrimary`
   * (which must then answer synchronously) is asked even when the codec says covered: MariaDB
   * compares one sequence number per domain, and a new primary whose sequence passed a lost
   * GTID "covers" it. The router then checks each token against the primary's sample before
   * routing, and the monitor each replica. Default false.
   */
  readonly coveredNeedsVerdict?: boolean | undefined;
  /**
   * Whether an error thrown by a read is worth one retry elsewhere (connection lost, server
   * shutting down). Errors in the caller's own query (syntax, read-only violation) are not.
   * Default: every error is retried once.
   */
  isRetryable?: ((error: unknown) => boolean) | undefined;
  /** Release pools and connections. */
  close(): Promise<void>;
}
