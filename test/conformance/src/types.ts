import type { Adapter } from '@tidemark/core/adapter';
import type { Cluster, ClusterCapability } from '@tidemark/test-clusters';
import type { FrontDoor } from './front-door.js';

/** One row of the workload every scenario writes and reads. */
export interface Order {
  readonly id: number;
  readonly customer: number;
  readonly note: string;
}

/**
 * The few database operations a scenario needs, written once per adapter. Scenarios never
 * speak SQL or BSON themselves; that is what keeps them database-neutral.
 */
export interface Workload<C> {
  /** Create the orders table (or collection) on the primary; idempotent. */
  setup(cluster: Cluster): Promise<void>;
  insertOrder(connection: C, order: Order): Promise<void>;
  /** Ids of the customer's orders, newest (highest id) first, at most 20. */
  ordersOf(connection: C, customer: number): Promise<number[]>;
  /** A write that must fail when the connection is read-only (invariant 7). */
  tryWrite(connection: C): Promise<void>;
}

/**
 * Positions a target can forge for the bad-token scenario. Only the adapter knows its position
 * format, so it supplies the invalid inputs.
 */
export interface BadPositions<P> {
  /** A syntactically valid position the primary cannot have reached (far ahead of `current`). */
  impossible(current: P): P;
  /** URL-safe text that is not a valid position for this adapter's codec. */
  readonly invalidText: string;
}

/** What a scenario needs from an adapter beyond the target's defaults. */
export interface AdapterNeeds {
  /**
   * The scenario needs a write the primary acknowledges before any replica has it, so that a
   * failover can lose it (promotion-lost-write). Adapters that refuse such writes by default
   * (MongoDB: majority write concern) opt out for this adapter only; asynchronous SQL
   * replication allows it anyway.
   */
  readonly unreplicatedWrites?: boolean;
  /**
   * Add a replica with this id at an address where nothing listens (the adapter contract's
   * retryable-error check): its reads and probes must fail as retryable.
   */
  readonly unreachableReplica?: string;
  /**
   * One connection per pool (where the adapter pools them): a check then sees whether a
   * connection the adapter had to give up was replaced, since no other one could serve.
   */
  readonly singleConnection?: boolean;
}

/**
 * What the adapter contract needs beyond the workload, written once per adapter: statements
 * only the adapter's database understands.
 */
export interface ContractOps<C> {
  /** A read that keeps the server busy for about `seconds` (an abort must cut it short). */
  slowRead(connection: C, seconds: number): Promise<unknown>;
  /** A statement the server rejects as malformed: the caller's mistake, never retryable. */
  badQuery(connection: C): Promise<unknown>;
  /** Whether `error` is the database refusing a write because the session is read-only. */
  isReadOnlyRefusal(error: unknown): boolean;
  /** Open a transaction on the connection and insert `order` inside it, leaving it open. */
  insertInOpenTransaction(connection: C, order: Order): Promise<void>;
  /**
   * Why an open transaction's writes survive a rollback on this target, when they do (a
   * simulator that runs no transactions); undefined where a rollback discards them.
   */
  readonly noRollbackReason?: string;
}

/**
 * Everything the suite needs to prove one adapter against one kind of cluster. Add a target per
 * adapter and cluster flavour; scenarios stay untouched.
 */
export interface ConformanceTarget<P, C> {
  /** Target name as used in TIDEMARK_TARGETS and in report lines, e.g. `pg15`. */
  readonly name: string;
  /** Start a fresh cluster: a primary and two replicas. */
  startCluster(): Promise<Cluster>;
  /** An adapter for the cluster's current topology (reads `cluster.primary()` at call time). */
  createAdapter(cluster: Cluster, needs?: AdapterNeeds): Adapter<P, C>;
  readonly workload: Workload<C>;
  readonly badPositions: BadPositions<P>;
  /** The adapter contract's database-specific statements. */
  readonly contract: ContractOps<C>;
  /**
   * Only for targets whose server cannot be provided on every machine (a real MongoDB here):
   * why it cannot run now, or undefined when it can. The suite then skips the target loudly and
   * never counts it as passed. Targets without it never skip: a cluster that fails to start
   * fails every scenario.
   */
  unavailableReason?(): Promise<string | undefined>;
  /**
   * Set by `throughFrontDoor`: scenarios that write and read orders do so through this
   * integration (an ORM over the router) and use its own replica helper as the control.
   */
  readonly frontDoor?: FrontDoor;
}

/** A target with its position and connection types erased, as the registry holds them. */
// biome-ignore lint/suspicious/noExplicitAny: targets differ in position and connection types; scenarios are generic over both.
export type AnyConformanceTarget = ConformanceTarget<any, any>;

/** One assertion a scenario makes; a scenario passes only when all of its checks pass. */
export interface Check {
  readonly name: string;
  readonly pass: boolean;
  /** What was expected and what was measured. */
  readonly detail: string;
}

/** What a scenario measured. Counts are printed in report lines in insertion order. */
export interface ScenarioOutcome {
  readonly counts: Readonly<Record<string, number>>;
  readonly checks: readonly Check[];
}

/** One scenario run against one target. */
export interface ScenarioReport {
  readonly target: string;
  readonly scenario: string;
  /**
   * `not-applicable`: the target's cluster cannot stage what the scenario needs (see `needs`);
   * nothing ran, and it is never counted as a pass.
   */
  readonly result: 'pass' | 'fail' | 'not-applicable';
  /** With `not-applicable`: the capabilities the scenario needs and the cluster lacks. */
  readonly needs?: readonly ClusterCapability[];
  readonly ms: number;
  readonly counts: Readonly<Record<string, number>>;
  readonly checks: readonly Check[];
  /** Set when the scenario could not run to the end (cluster start failed, unexpected throw). */
  readonly error?: string;
}
