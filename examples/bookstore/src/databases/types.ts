import type { FrontDoorFactory } from '../strategies/tidemark.js';
import type { TidemarkSettings } from '../strategies/tidemark-settings.js';
import type { Strategy, StrategyContext } from '../strategies/types.js';

/**
 * The databases the demo runs on: `--db pg|mysql|mariadb|mongo-sim`. `mongo-sim` is MongoDB on the
 * test harness's in-process replica-set SIMULATOR, not a real mongod.
 */
export const DB_NAMES = ['pg', 'mysql', 'mariadb', 'mongo-sim'] as const;
export type DbName = (typeof DB_NAMES)[number];

/** A small pool of connections to one server, in the database driver's own connection type. */
export interface NodePool<C> {
  /** Run `fn` on one pooled connection and always give it back. */
  use<T>(fn: (connection: C) => Promise<T>): Promise<T>;
  end(): Promise<void>;
}

/**
 * The bookstore's two statements in one database's SQL. The workload calls only these, so it
 * stays one module for every database.
 */
export interface OrderQueries<C> {
  /** The write: one order, returning the id the customer is told about. */
  placeOrder(connection: C, customer: number, note: string): Promise<number>;
  /** The read: the customer's "my orders" page, their latest orders first. */
  latestOrders(connection: C, customer: number): Promise<number[]>;
}

/** What the lab router's monitor learns from one sample of the replica. */
export interface ReplicaSample<Pos> {
  /** What the replica has applied (LSN, GTID set, GTID position). */
  readonly applied: Pos;
  /** Seconds behind; undefined when the server cannot tell (the lab router then avoids it). */
  readonly lagSeconds: number | undefined;
}

/**
 * The lab router's own position handling for one database. Deliberately not Tidemark's code:
 * the lab router is the baseline Tidemark is measured against.
 */
export interface LabPositions<C, Pos> {
  /** Header text, e.g. "its replay LSN >= the session's last write LSN". */
  readonly rule: string;
  /** The position of the write just committed, read on the same connection after the commit. */
  afterWrite(connection: C): Promise<Pos>;
  /** One monitor sample; undefined when the replica has no position to report. */
  sample(replica: NodePool<C>): Promise<ReplicaSample<Pos> | undefined>;
  /** True when a replica that applied `applied` has everything in `required`. */
  covers(applied: Pos, required: Pos): boolean;
}

/** The primary and the one replica the demo runs against, and the few controls it needs. */
export interface DemoCluster {
  /** For the header, e.g. "embedded PostgreSQL 18.4 (harness target pg18), primary ...". */
  readonly description: string;
  readonly primaryUrl: string;
  readonly replicaUrl: string;
  /** Stop applying changes on the replica (it keeps receiving them); resolves once stopped. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Give the next run a fresh, empty `orders` table and wait until the replica has it too. */
  resetOrders(): Promise<void>;
  /** Wait until the replica has applied everything the primary has committed so far. */
  waitForReplicaCatchUp(timeoutMs?: number): Promise<void>;
  /** Remove everything the demo created (schema or database `tidemark_bookstore`). */
  dropDemoData(): Promise<void>;
  /** Stop what the demo started (servers for a local cluster, a pause on your own cluster). */
  close(): Promise<void>;
}

/** Texts of the human header that depend on the database. */
export interface DatabaseTexts {
  /** Progress line while the local cluster starts, e.g. "starting embedded PostgreSQL ...". */
  readonly starting: string;
  /** How the paused scenario pauses, e.g. "replay paused on the replica". */
  readonly paused: string;
  /** Tidemark's adapter and how it waits, for the tidemark header line. */
  readonly tidemarkAdapter: string;
  readonly tidemarkWait: string;
  /**
   * A caveat printed under the header and under the summary (human output only), e.g. that the
   * cluster is a simulator. Undefined: none.
   */
  readonly notice?: string;
}

/** Everything database-specific in the demo, behind one interface; `C` is the connection type. */
export interface Database<C> {
  readonly name: DbName;
  readonly texts: DatabaseTexts;
  readonly orders: OrderQueries<C>;
  /** `unknown` position: each implementation is internally consistent, callers never mix. */
  readonly lab: LabPositions<C, unknown>;
  openPool(url: string): NodePool<C>;
  /** Start the harness's local primary + one replica (no Docker). */
  startLocalCluster(): Promise<DemoCluster>;
  /** Use the caller's own primary and replica (`--primary-url`, `--replica-url`). */
  connectExternalCluster(primaryUrl: string, replicaUrl: string): Promise<DemoCluster>;
  /**
   * Tidemark's strategy: core Router over this database's adapter (loaded on demand); with
   * `door`, the workload's queries reach the router through an ORM's front door (`--via`).
   */
  createTidemarkStrategy<H = C>(
    context: StrategyContext,
    settings: TidemarkSettings,
    door?: FrontDoorFactory<C, H>,
  ): Promise<Strategy<H>>;
}
