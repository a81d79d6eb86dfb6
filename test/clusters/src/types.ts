// The contract every cluster provider implements. Database-neutral on purpose: PostgreSQL
// implements it now; MySQL/MariaDB and the MongoDB simulator will implement the same shape, so
// the conformance suite can drive any adapter's cluster the same way.

export type Flavour = 'postgres' | 'mysql' | 'mariadb' | 'mongo' | 'mongo-sim';

export interface ClusterNode {
  /** 'n0', 'n1', ... stable for the life of the cluster, whatever the node's role becomes. */
  readonly name: string;
  role: 'primary' | 'replica';
  readonly host: string;
  readonly port: number;
  /** Driver connection URL including user and database. */
  readonly url: string;
  running: boolean;
}

/**
 * What a cluster can stage, beyond starting and querying. A scenario that needs a capability the
 * cluster lacks is reported "not applicable", never passed.
 *
 * - `pause`: {@link Cluster.pauseReplay} / {@link Cluster.resumeReplay}.
 * - `kill`: {@link Cluster.stop}, {@link Cluster.kill}, {@link Cluster.start}.
 * - `promote`: {@link Cluster.promote} re-pointing the other replicas.
 * - `promote-partial`: {@link Cluster.promote} with `repoint: []` (replicas left on the old history).
 * - `cut-off`: {@link Cluster.cutOff} / {@link Cluster.reconnect}.
 * - `freeze`: {@link Cluster.freeze} / {@link Cluster.thaw}.
 * - `rejoin`: {@link Cluster.rejoin}.
 * - `follow-diverged`: a replica that applied writes the new primary lacks, re-pointed by
 *   {@link Cluster.promote}, follows the new primary and keeps them (MySQL: errant GTIDs under
 *   GTID auto-positioning). Where the database refuses such a replica (PostgreSQL past the switch
 *   point, MariaDB in strict mode) or rolls the writes back (MongoDB), it is absent.
 */
export type ClusterCapability =
  | 'pause'
  | 'kill'
  | 'promote'
  | 'promote-partial'
  | 'cut-off'
  | 'freeze'
  | 'rejoin'
  | 'follow-diverged';

/** What every cluster this package starts itself can stage (local processes, containers). */
export const STAGING_CAPABILITIES: readonly ClusterCapability[] = [
  'pause',
  'kill',
  'promote',
  'promote-partial',
  'cut-off',
  'freeze',
  'rejoin',
];

/** Every capability; `follow-diverged` depends on the database, not on how it was started. */
export const ALL_CAPABILITIES: readonly ClusterCapability[] = [
  ...STAGING_CAPABILITIES,
  'follow-diverged',
];

export interface PromoteOptions {
  /**
   * Replicas to re-point at the new primary. Default: every running replica. `[]` leaves the
   * others where they are: still replicas of this cluster, but following nothing (the old
   * primary is down), on the old history, as in the first minutes of a real failover.
   * Anything but the default needs the `promote-partial` capability.
   */
  readonly repoint?: readonly string[];
  /**
   * Re-point replicas even when they hold writes the new primary lacks: they follow it and keep
   * those writes (MySQL: errant GTIDs), as after an operator re-points every replica without
   * checking them, or when a replica applied the last relay-logged writes just after it was
   * checked. Default false: such a replica is left running, not replicating, and promote()
   * throws. Needs the `follow-diverged` capability.
   */
  readonly keepDiverged?: boolean;
}

export interface Cluster {
  /** The target it was started for, e.g. 'pg15'. */
  readonly target: string;
  readonly flavour: Flavour;
  /** Server version string as reported by the server. */
  readonly version: string;
  primary(): ClusterNode;
  replicas(): ClusterNode[];
  nodes(): ClusterNode[];
  /** Stop applying replicated changes on a replica (it keeps receiving them); resolves once paused. */
  pauseReplay(name: string): Promise<void>;
  resumeReplay(name: string): Promise<void>;
  /** Clean stop. */
  stop(name: string): Promise<void>;
  /** Crash the node: SIGKILL the server process. */
  kill(name: string): Promise<void>;
  /** Start a stopped or killed node again; resolves once it accepts connections. */
  start(name: string): Promise<void>;
  /** What this cluster can stage; the methods of a missing capability throw. */
  readonly capabilities: ReadonlySet<ClusterCapability>;
  /**
   * Promote a replica. The old primary is stopped (if still running) and left stopped; the other
   * running replicas are re-pointed at the new primary and follow its new history (only those in
   * `options.repoint` when given; see {@link PromoteOptions}).
   */
  promote(name: string, options?: PromoteOptions): Promise<void>;
  /**
   * Cut a running replica off from its source: it stops receiving changes but keeps running
   * and serving reads of what it has (a network partition between it and its primary).
   */
  cutOff(name: string): Promise<void>;
  /** Undo {@link Cluster.cutOff}: the replica receives from the current primary again. */
  reconnect(name: string): Promise<void>;
  /**
   * Freeze a node's server (SIGSTOP): it stays alive and its port accepts TCP connections,
   * but it answers nothing until {@link Cluster.thaw} (a hung or extremely slow server).
   */
  freeze(name: string): Promise<void>;
  thaw(name: string): Promise<void>;
  /**
   * Rebuild a node (stopped, or running on a history that diverged from the current primary's)
   * as a fresh replica of the current primary; resolves once it follows the primary.
   */
  rejoin(name: string): Promise<void>;
  /** Per running node: its replication position as text (primary: write position; replica: applied). */
  positions(): Promise<Record<string, string>>;
  /** Run SQL on one node and return the rows (of the last statement when there are several). */
  exec(name: string, sql: string): Promise<unknown[]>;
  /** Stop every server this cluster started and remove its temporary files. Idempotent. */
  teardown(): Promise<void>;
}

export const DEFAULT_REPLICAS = 2;

export interface StartOptions {
  /** Number of replicas; default 2. */
  replicas?: number;
}

export type Availability = { ok: true } | { ok: false; reason: string };

export interface ClusterProvider {
  readonly name: 'local' | 'testcontainers' | 'external';
  supports(target: string): boolean;
  available(target: string): Promise<Availability>;
  start(target: string, options?: StartOptions): Promise<Cluster>;
}
