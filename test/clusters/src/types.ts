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
  /**
   * Promote a replica. The old primary is stopped (if still running) and left stopped; the other
   * running replicas are re-pointed at the new primary and follow its new history.
   */
  promote(name: string): Promise<void>;
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
