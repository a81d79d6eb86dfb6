import {
  type Adapter,
  ConfigError,
  ErrorCode,
  type PositionCodec,
  PRIMARY,
  PrimarySamples,
  type ProbeContext,
  type ProbeResult,
  type ReadContext,
  type ReadOutcome,
  TidemarkError,
  type WaitOutcome,
  type WriteOptions,
  type WriteOutcome,
} from '@tidemark/core';
import mysql, { type Pool, type PoolConnection, type PoolOptions } from 'mysql2/promise';
import type { OkPacket, TripCounter } from './connection-tap.js';
import { MysqlAdapterError, MysqlErrorCode, unexpected } from './errors.js';
import { type Flavour, type FlavourName, firstRow, type PrimaryIdentity } from './flavour.js';
import type { GtidSet } from './gtid-set.js';
import { withConnection } from './lease.js';
import { createMariadbFlavour } from './mariadb-flavour.js';
import type { MariadbGtidPosition } from './mariadb-gtid.js';
import { createMysqlFlavour } from './mysql-flavour.js';
import { buildPoolOptions, parseConnectionUrl } from './pool-options.js';
import { isRetryableMysqlError } from './retryable.js';
import { SessionSetup } from './session-setup.js';

export interface MysqlAdapterOptions {
  /** `mysql` (MySQL 8.0.17+, GTID sets) or `mariadb` (MariaDB 10.5+, GTID positions). */
  flavour: 'mysql' | 'mariadb';
  /** The primary: a connection URL (`mysql://user:password@host:port/database`) or pool options. */
  primary: string | PoolOptions;
  /** Replica id -> URL or pool options. Ids appear in route decisions; `primary` is reserved. */
  replicas: Record<string, string | PoolOptions>;
  /** Max connections per pool (unless pool options set `connectionLimit`). Default 10. */
  poolSize?: number;
}

/**
 * What the adapter cost, counted per command sent (mysql2 sends a command only after the previous
 * one was answered, so one command is one round trip; an `execute` of a statement not prepared
 * yet is two: prepare and execute).
 */
export interface MysqlRoundTrips {
  /** Writes started. */
  readonly writes: number;
  /** Round trips on write connections: START TRANSACTION, the callback's statements, COMMIT, and any fallback capture. */
  readonly roundTrips: number;
  /** Writes whose OK packets carried no position, so one extra query read it (see README). */
  readonly captureFallbacks: number;
  /** Reads started. */
  readonly reads: number;
  /** Round trips on read connections: the callback's statements and the observation after them. */
  readonly readRoundTrips: number;
  /** Connections that ran the once-per-connection session setup (tracking or read-only mode). */
  readonly sessionSetups: number;
  /** Round trips those setups cost (one each). */
  readonly setupRoundTrips: number;
}

/** The adapter for a {@link Router}; `P` is `GtidSet` (MySQL) or `MariadbGtidPosition`. */
export interface MysqlAdapter<P> extends Adapter<P, PoolConnection> {
  readonly flavour: FlavourName;
  /** Always present: both flavours wait server-side. */
  readonly waitFor: NonNullable<Adapter<P, PoolConnection>['waitFor']>;
  readonly classifyAgainstPrimary: NonNullable<
    Adapter<P, PoolConnection>['classifyAgainstPrimary']
  >;
  roundTrips(): MysqlRoundTrips;
}

/**
 * Create the MySQL or MariaDB adapter for a {@link Router}: one primary and any number of
 * replicas. Pools are created now and connect lazily.
 *
 * Writes capture the committed position from the OK packet of the committing statement (session
 * tracking, set once per connection): no extra round trip. Reads run on sessions set to
 * `TRANSACTION READ ONLY` once per connection, on replicas and on the primary fallback alike, and
 * report the node's applied position read after the callback on the same connection.
 *
 * @throws ConfigError on invalid options.
 */
export function createMysqlAdapter(
  options: MysqlAdapterOptions & { flavour: 'mysql' },
): MysqlAdapter<GtidSet>;
export function createMysqlAdapter(
  options: MysqlAdapterOptions & { flavour: 'mariadb' },
): MysqlAdapter<MariadbGtidPosition>;
export function createMysqlAdapter(
  options: MysqlAdapterOptions,
): MysqlAdapter<GtidSet> | MysqlAdapter<MariadbGtidPosition>;
export function createMysqlAdapter(
  options: MysqlAdapterOptions,
): MysqlAdapter<GtidSet> | MysqlAdapter<MariadbGtidPosition> {
  validateOptions(options);
  return options.flavour === 'mysql'
    ? new MysqlClusterAdapter(createMysqlFlavour(), options)
    : new MysqlClusterAdapter(createMariadbFlavour(), options);
}

/** Every new read connection runs this once: a write inside a read then fails with error 1792. */
const READ_ONLY_SETUP_SQL = 'SET SESSION TRANSACTION READ ONLY';
/** Probes use small separate pools so that busy read pools never delay them. */
const MONITOR_POOL_SIZE = 2;
const MONITOR_CONNECT_TIMEOUT_MS = 2000;
/**
 * Shortest server-side wait, in seconds. MySQL's WAIT_FOR_EXECUTED_GTID_SET blocks forever with a
 * timeout of 0 (and MariaDB's MASTER_GTID_WAIT with a negative one): never send either.
 */
const MIN_WAIT_SECONDS = 0.001;

/** The pools of one node: reads (and waits), and probes (and KILL QUERY of aborted reads). */
interface ReplicaPools {
  readonly read: Pool;
  readonly monitor: Pool;
}

class MysqlClusterAdapter<P> implements MysqlAdapter<P> {
  readonly flavour: FlavourName;
  readonly codec: PositionCodec<P>;
  readonly replicas: readonly string[];
  private readonly primaryWrite: Pool;
  private readonly primaryRead: Pool;
  private readonly primaryMonitor: Pool;
  private readonly primaryPools: ReplicaPools;
  private readonly replicaPools = new Map<string, ReplicaPools>();
  private readonly writeTrips: TripCounter = { operations: 0, roundTrips: 0 };
  private readonly readTrips: TripCounter = { operations: 0, roundTrips: 0 };
  private readonly setupTrips: TripCounter = { operations: 0, roundTrips: 0 };
  private readonly writeSetup: SessionSetup;
  private readonly readSetup: SessionSetup;
  private readonly timeline: PrimarySamples<P>;
  private primaryIdentity: PrimaryIdentity | undefined;
  private captureFallbacks = 0;
  private closed = false;

  constructor(
    private readonly dialect: Flavour<P>,
    options: MysqlAdapterOptions,
  ) {
    this.flavour = dialect.name;
    this.codec = dialect.codec;
    this.timeline = new PrimarySamples(dialect.codec);
    this.writeSetup = new SessionSetup(dialect.writeSetupSql, this.setupTrips);
    this.readSetup = new SessionSetup(READ_ONLY_SETUP_SQL, this.setupTrips);
    const connectionLimit = options.poolSize ?? 10;
    const monitor = {
      connectionLimit: MONITOR_POOL_SIZE,
      connectTimeout: MONITOR_CONNECT_TIMEOUT_MS,
      multipleStatements: dialect.probeNeedsMultipleStatements,
    };
    this.primaryWrite = createPool(buildPoolOptions(options.primary, { connectionLimit }));
    this.writeSetup.attach(this.primaryWrite);
    this.primaryRead = this.createReadPool(options.primary, connectionLimit);
    this.primaryMonitor = createPool(buildPoolOptions(options.primary, monitor));
    for (const [id, source] of Object.entries(options.replicas)) {
      this.replicaPools.set(id, {
        // Replicas usually refuse writes anyway (super_read_only); this also covers a replica
        // that was promoted, and users with SUPER on a MariaDB read_only replica.
        read: this.createReadPool(source, connectionLimit),
        monitor: createPool(buildPoolOptions(source, monitor)),
      });
    }
    this.replicas = [...this.replicaPools.keys()];
    this.primaryPools = { read: this.primaryRead, monitor: this.primaryMonitor };
  }

  async read<T>(
    target: string,
    fn: (connection: PoolConnection) => Promise<T>,
    context: ReadContext,
  ): Promise<ReadOutcome<T, P>> {
    this.assertOpen();
    const pools = target === PRIMARY ? this.primaryPools : this.pools(target);
    this.readTrips.operations++;
    return withConnection(
      pools.read,
      {
        signal: context.signal,
        counter: this.readTrips,
        setup: this.readSetup,
        cancel: killQueryOn(pools.monitor),
      },
      async (connection) => {
        const value = await fn(connection);
        // The router settles the position from a shared probe sent after the read (no round
        // trip here); asked to observe, read it after the callback on the same connection.
        if (context.observe === false) return { value };
        const [rows] = await connection.query(this.dialect.positionSql);
        return { value, observed: this.position(rows, 'the position after a read') };
      },
    );
  }

  async write<T>(
    fn: (connection: PoolConnection) => Promise<T>,
    options: WriteOptions,
  ): Promise<WriteOutcome<T, P>> {
    this.assertOpen();
    this.writeTrips.operations++;
    const managed = options.transaction ?? true;
    let seen: P | undefined;
    let unreadable = false;
    // Every OK packet of the lease, whichever driver API sent the statement: the GTIDs of all
    // the transactions this connection committed during the write.
    const onOk = (ok: OkPacket) => {
      try {
        const position = this.dialect.positionFromOk(ok.stateChanges);
        if (position !== undefined) {
          seen = seen === undefined ? position : this.codec.merge(seen, position);
        }
      } catch {
        // Throwing here would break mysql2's packet handling; fall back to a query instead.
        unreadable = true;
      }
    };
    return withConnection(
      this.primaryWrite,
      {
        counter: this.writeTrips,
        onOk,
        setup: this.writeSetup,
        explainSetupFailure: (error) => this.dialect.explainSetupFailure(error),
      },
      async (connection, lease) => {
        let value: T;
        if (managed) {
          await connection.query('START TRANSACTION');
          try {
            value = await fn(connection);
          } catch (error) {
            await rollbackQuietly(connection);
            throw error;
          }
          await connection.query('COMMIT');
        } else {
          value = await fn(connection);
          if (lease.inTransaction() === true) {
            await rollbackQuietly(connection);
            throw new MysqlAdapterError(
              MysqlErrorCode.TransactionLeftOpen,
              'The callback of a write with transaction: false returned inside an open transaction, so there was no commit to capture a position after; it was rolled back. COMMIT inside the callback, or use transaction: true (the default).',
            );
          }
        }
        const position =
          seen !== undefined && !unreadable ? seen : await this.captureFallback(connection);
        return { value, position };
      },
    );
  }

  async probe(replicaId: string, context: ProbeContext<P>): Promise<ProbeResult<P>> {
    this.assertOpen();
    const pools = this.pools(replicaId);
    return withConnection(pools.monitor, { signal: context.signal }, async (connection) => {
      const [rows] = await connection.query(this.dialect.probeSql);
      const facts = parseWith(() => this.dialect.parseProbe(rows), 'the replica probe');
      const lagSeconds = this.lagSeconds(facts);
      return {
        applied: facts.applied,
        paused: facts.paused,
        ...(lagSeconds === undefined ? {} : { lagSeconds }),
      };
    });
  }

  async probePrimary(context: { signal: AbortSignal }): Promise<P> {
    this.assertOpen();
    return withConnection(this.primaryMonitor, { signal: context.signal }, async (connection) => {
      const [rows] = await connection.query(this.dialect.primaryProbeSql);
      const facts = parseWith(() => this.dialect.parsePrimaryProbe(rows), 'the primary probe');
      this.primaryIdentity = facts.identity;
      this.timeline.note(facts.position, Date.now());
      return facts.position;
    });
  }

  /**
   * Bounded server-side wait on the replica's read pool: one statement that waits
   * (WAIT_FOR_EXECUTED_GTID_SET / MASTER_GTID_WAIT) and then reads the applied position. The
   * verdict comes from comparing that position with the required one, so a replica on another
   * history never counts as caught up.
   */
  readonly waitFor = async (
    replicaId: string,
    position: P,
    timeoutMs: number,
    context: { signal: AbortSignal },
  ): Promise<WaitOutcome<P>> => {
    this.assertOpen();
    const pools = this.pools(replicaId);
    if (!(timeoutMs > 0) || context.signal.aborted) return { outcome: 'timeout' };
    const seconds = Math.max(MIN_WAIT_SECONDS, Math.ceil(timeoutMs) / 1000);
    const text = this.dialect.formatForServer(position);
    return withConnection(
      pools.read,
      { signal: context.signal, setup: this.readSetup, cancel: killQueryOn(pools.monitor) },
      async (connection) => {
        let rows: unknown;
        try {
          [rows] = await connection.query(this.dialect.waitSql, [text, seconds]);
        } catch (error) {
          if (isRetryableMysqlError(error) || context.signal.aborted) throw error;
          throw waitFailed(this.flavour, replicaId, error);
        }
        const row = parseWith(() => firstRow(rows, 'the wait'), 'the wait');
        const reached = parseWith(() => this.dialect.waitReached(row['waited']), 'the wait');
        const observed = this.position(rows, 'the position after a wait');
        const relation = this.codec.compare(observed, position);
        if (relation === 'covered') return { outcome: 'reached', applied: observed };
        if (relation === 'other-history') return { outcome: 'other-history' };
        // The server says reached but the position read with it does not show it: it was read
        // too early. Both are applied, so their least upper bound is too.
        if (reached) return { outcome: 'reached', applied: this.codec.merge(observed, position) };
        return { outcome: 'timeout' };
      },
    );
  };

  readonly classifyAgainstPrimary = (primary: P, required: P) =>
    this.dialect.classify(primary, required, this.primaryIdentity);

  isRetryable(error: unknown): boolean {
    return isRetryableMysqlError(error);
  }

  roundTrips(): MysqlRoundTrips {
    return {
      writes: this.writeTrips.operations,
      roundTrips: this.writeTrips.roundTrips,
      captureFallbacks: this.captureFallbacks,
      reads: this.readTrips.operations,
      readRoundTrips: this.readTrips.roundTrips,
      sessionSetups: this.setupTrips.operations,
      setupRoundTrips: this.setupTrips.roundTrips,
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const pools = [this.primaryWrite, this.primaryRead, this.primaryMonitor];
    for (const replica of this.replicaPools.values()) pools.push(replica.read, replica.monitor);
    await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
  }

  /**
   * No OK packet carried a position: the callback wrote nothing, or wrote on a path the adapter
   * cannot see. The node's whole applied position is then read on the committing connection
   * after the commit. It is a superset of this session's writes: correct, but it may make reads
   * wait for other sessions' writes too (it errs toward freshness).
   */
  private async captureFallback(connection: PoolConnection): Promise<P> {
    this.captureFallbacks++;
    const [rows] = await connection.query(this.dialect.positionSql);
    return this.position(rows, 'the position after a write');
  }

  private position(rows: unknown, what: string): P {
    return parseWith(() => this.dialect.parsePosition(firstRow(rows, what)['position']), what);
  }

  /**
   * The replica's own view of its lag when it can tell (applier running, receiver connected);
   * otherwise the larger of what it can tell and the estimate from the primary's side (at least
   * the age of the oldest primary position it lacks).
   */
  private lagSeconds(facts: {
    applied: P;
    replicating: boolean;
    paused: boolean;
    receiving: boolean;
    ownLagSeconds: number | undefined;
  }): number | undefined {
    // Following nothing (source gone, replication reset): its own view says nothing about how
    // far the primary has moved on, so only the primary's side counts.
    if (!facts.replicating) return this.timeline.lagSeconds(facts.applied, Date.now());
    if (!facts.paused && facts.receiving && facts.ownLagSeconds !== undefined) {
      return facts.ownLagSeconds;
    }
    const estimate = this.timeline.lagSeconds(facts.applied, Date.now());
    if (facts.ownLagSeconds === undefined) return estimate;
    return estimate === undefined ? facts.ownLagSeconds : Math.max(facts.ownLagSeconds, estimate);
  }

  private createReadPool(source: string | PoolOptions, connectionLimit: number): Pool {
    const pool = createPool(buildPoolOptions(source, { connectionLimit }));
    this.readSetup.attach(pool);
    return pool;
  }

  private pools(id: string): ReplicaPools {
    const pools = this.replicaPools.get(id);
    if (!pools) {
      throw new ConfigError(`Unknown replica "${id}"; configured: ${this.replicas.join(', ')}.`);
    }
    return pools;
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new TidemarkError(ErrorCode.Closed, `The ${this.flavour} adapter is closed.`);
    }
  }
}

function createPool(options: PoolOptions): Pool {
  return mysql.createPool(options);
}

/**
 * Stop an aborted statement on the server, from another connection to the same node. Best effort:
 * the caller has already been answered, and a statement that finished meanwhile is not an error.
 */
function killQueryOn(pool: Pool): (threadId: number) => void {
  return (threadId) => {
    pool.query('KILL QUERY ?', [threadId]).catch(() => undefined);
  };
}

/** Run a parser of server output; anything it throws becomes an UnexpectedResult error. */
function parseWith<T>(parse: () => T, what: string): T {
  try {
    return parse();
  } catch (error) {
    throw unexpected(`${what}: ${error instanceof Error ? error.message : String(error)}`, error);
  }
}

function waitFailed(flavour: FlavourName, replicaId: string, error: unknown): MysqlAdapterError {
  const { errno, message } = error as { errno?: unknown; message?: unknown };
  const fn = flavour === 'mysql' ? 'WAIT_FOR_EXECUTED_GTID_SET' : 'MASTER_GTID_WAIT';
  return new MysqlAdapterError(
    MysqlErrorCode.WaitFailed,
    `${fn} failed on replica "${replicaId}" (${typeof errno === 'number' ? `error ${errno}: ` : ''}${String(message)}). The position may be malformed for this server (error 1772) or GTIDs may be off on the replica; the router falls back to polling or the primary.`,
    { cause: error },
  );
}

async function rollbackQuietly(connection: PoolConnection): Promise<void> {
  try {
    await connection.query('ROLLBACK');
  } catch {
    // The lease destroys a connection left inside a transaction.
  }
}

function validateOptions(options: MysqlAdapterOptions): void {
  if (options === null || typeof options !== 'object') {
    throw new ConfigError(
      'createMysqlAdapter needs an options object with flavour, primary and replicas.',
    );
  }
  if (options.flavour !== 'mysql' && options.flavour !== 'mariadb') {
    throw new ConfigError(
      `flavour must be 'mysql' or 'mariadb', got ${JSON.stringify(options.flavour)}.`,
    );
  }
  checkSource('primary', options.primary);
  if (options.replicas === null || typeof options.replicas !== 'object') {
    throw new ConfigError(
      'replicas must be an object mapping replica ids to URLs or pool options.',
    );
  }
  for (const [id, source] of Object.entries(options.replicas)) {
    if (id === PRIMARY || id.trim() === '') {
      throw new ConfigError(`Replica id ${JSON.stringify(id)} is reserved or empty; rename it.`);
    }
    checkSource(`Replica "${id}"`, source);
  }
  const poolSize = options.poolSize ?? 10;
  if (!Number.isInteger(poolSize) || poolSize < 1) {
    throw new ConfigError(`poolSize must be a positive integer, got ${String(options.poolSize)}.`);
  }
}

function checkSource(name: string, source: unknown): void {
  if (typeof source === 'string') {
    try {
      parseConnectionUrl(source);
    } catch (error) {
      throw new ConfigError(
        `${name} is not a usable connection URL (${error instanceof Error ? error.message : String(error)}); expected mysql://user:password@host:port/database.`,
      );
    }
    return;
  }
  if (source === null || typeof source !== 'object') {
    throw new ConfigError(`${name} must be a connection URL or mysql2 pool options.`);
  }
}
