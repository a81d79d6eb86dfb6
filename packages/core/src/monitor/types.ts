import type { Emitter } from '../events.js';

/** What one probe of a replica reports. Adapters build it from one cheap query. */
export interface ProbeResult<P> {
  /** Position the replica has applied (replayed), visible to new reads. */
  readonly applied: P;
  /** Seconds the replica's visible state trails the primary, when the database can tell. */
  readonly lagSeconds?: number;
  /** Bytes of log not yet applied, where the database has them (PostgreSQL). */
  readonly lagBytes?: number;
  /** True when apply is paused on purpose (PostgreSQL replay pause, MySQL stopped applier). */
  readonly paused?: boolean;
}

/** Context handed to a probe. */
export interface ProbeContext<P> {
  /** Aborted when the probe timeout fires; adapters should cancel the query. */
  readonly signal: AbortSignal;
  /** Latest primary position the monitor knows, for adapters that compute lag bytes. */
  readonly primary: P | undefined;
}

/**
 * Whether a replica is on the current primary's history (invariant 9):
 *
 * - `current`: its applied position is part of the primary's history (equal, behind, or ahead of
 *   the last primary sample on the same line).
 * - `diverged`: it holds changes the primary's history does not have (a replica left on the old
 *   history after a failover, errant transactions). It serves no reads until it is rebuilt or
 *   re-pointed and reports a compatible position again.
 * - `unknown`: no verdict yet (no primary sample, or the check could not run). Not readable:
 *   fail closed (invariant 10).
 * - `unchecked`: the monitor has no way to sample the primary, so it cannot judge; correctness
 *   then rests on tokens alone, and staleness on the replica's own lag report.
 */
export type ReplicaHistory = 'current' | 'diverged' | 'unknown' | 'unchecked';

/** The monitor's view of one replica. Immutable: a new object replaces it on every change. */
export interface ReplicaState<P> {
  readonly id: string;
  /** Whether the last probe (or read) on this replica succeeded. */
  readonly reachable: boolean;
  /** Latest applied position; only moves forward within one history (invariant 2). */
  readonly applied: P | undefined;
  readonly lagSeconds: number | undefined;
  readonly lagBytes: number | undefined;
  readonly paused: boolean;
  /** See {@link ReplicaHistory}. */
  readonly history: ReplicaHistory;
  /**
   * Clock time (ms) since which the replica has lacked something the primary had, measured
   * against the primary's own samples (not against what the replica happened to receive);
   * undefined when it has everything the primary was last seen with. Staleness is at least
   * `now - behindPrimarySince`.
   */
  readonly behindPrimarySince: number | undefined;
  /** Clock time (ms) of the sample this state comes from; -Infinity before the first one. */
  readonly sampledAt: number;
  /** Consecutive failed probes or reads. */
  readonly failures: number;
  readonly lastError: unknown;
}

export interface MonitorEvents<P> {
  /** A replica's state changed (any field). */
  state: (state: ReplicaState<P>) => void;
  /** A replica became reachable or unreachable. */
  reachability: (state: ReplicaState<P>) => void;
  /**
   * A replica now reports a position from another history than the one the monitor held
   * (it was re-pointed after a failover). The monitor adopts the new history.
   */
  'history-change': (event: { id: string; previous: P; next: P }) => void;
  /** The primary's sampled position. */
  primary: (position: P) => void;
  /** A replica's history verdict changed (for example it was found `diverged`). */
  history: (event: { id: string; history: ReplicaHistory; previous: ReplicaHistory }) => void;
  /**
   * A probe of a replica answered (`result`) or failed (`error`). `sentAt` is the clock time the
   * probe was sent, which is how old its sample is. Emitted for this monitor's own probes only,
   * never for samples it was handed ({@link PollingMonitor.ingest}): what a shared replica view
   * publishes.
   */
  probe: (event: ProbeSample<P>) => void;
  /** A probe of the primary answered; `seenAt` is when (the primary held `position` by then). */
  'primary-probe': (event: { position: P; seenAt: number }) => void;
}

/** One probe of one replica, as {@link MonitorEvents.probe} reports it. */
export type ProbeSample<P> =
  | { readonly id: string; readonly sentAt: number; readonly result: ProbeResult<P> }
  | { readonly id: string; readonly sentAt: number; readonly error: unknown };

/**
 * Where the router learns what each replica has applied. The polling implementation is
 * {@link PollingMonitor}; adapters with push notifications (MongoDB heartbeats) can supply
 * their own.
 */
export interface ReplicaMonitor<P> {
  readonly events: Emitter<MonitorEvents<P>>;
  /** Current states, one per replica, in configuration order. Cheap: called on every read. */
  states(): ReadonlyArray<ReplicaState<P>>;
  state(id: string): ReplicaState<P> | undefined;
  /** Latest known primary position, if the monitor samples the primary. */
  primaryPosition(): P | undefined;
  /**
   * Report a position the replica is known to have applied (a finished wait or a read's own
   * observation). Never moves the view backwards.
   */
  observe(id: string, applied: P): void;
  /** Report a primary position learned elsewhere (a write's captured position). */
  observePrimary(position: P): void;
  /** Report that a read on the replica failed, so routing avoids it until it answers again. */
  reportFailure(id: string, error: unknown): void;
  /** Probe one replica now (or all when `id` is omitted) and wait for the result. */
  refresh(id?: string): Promise<void>;
  /**
   * Learn one replica's applied position now, as cheaply as the adapter can (its `observe`),
   * else as {@link ReplicaMonitor.refresh}. Optional: catch-up watchers use it when present.
   */
  refreshPosition?(id: string): Promise<void>;
  /** Probe the primary now and return its position, when the monitor can. */
  refreshPrimary(): Promise<P | undefined>;
  /**
   * A point in the order of probe sends: a probe sent after this call has a later ticket. Take one
   * when a read finishes; {@link ReplicaMonitor.appliedAfter} then accepts only probes sent after.
   */
  ticket(): number;
  /**
   * The replica's applied position from a probe sent after `ticket` was taken: an upper bound
   * of anything a read that had finished by then saw on it (replay only moves forward). A probe
   * already sent late enough is shared, so one probe settles every read that finished before it
   * was sent. Rejects when the replica does not answer.
   */
  appliedAfter(id: string, ticket: number): Promise<P>;
  /** Like {@link ReplicaMonitor.appliedAfter} for the primary's position. */
  primaryAfter(ticket: number): Promise<P>;
  /** Begin background polling. Idempotent. */
  start(): void;
  /** Stop polling and release timers. Idempotent. */
  close(): Promise<void>;
}
