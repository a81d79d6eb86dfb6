import { ConfigError } from '@tidemark/core';
import {
  type Adapter,
  AdapterLifecycle,
  type CapturedWrite,
  createPoolSet,
  errorMessage,
  MONITOR_CONNECT_TIMEOUT_MS,
  MONITOR_POOL_SIZE,
  type PoolSet,
  type PositionCodec,
  PrimarySamples,
  type PrimaryVerdict,
  type ProbeContext,
  type ProbeResult,
  type ReadContext,
  type ReadOutcome,
  RoundTripCounters,
  type RoundTrips,
  requireOptionsObject,
  TransactionLeftOpenError,
  tripCounter,
  validateOneOf,
  validatePoolSize,
  validateReplicas,
  type WaitOutcome,
  type WriteOptions,
  waitCannotStart,
  waitVerdict,
} from '@tidemark/core/adapter';
import mysql, { type Pool, type PoolConnection, type PoolOptions } from 'mysql2/promise';
import type { OkPacket } from './connection-tap.js';
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
import { VerdictMemo } from './verdict-memo.js';

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
export interface MysqlRoundTrips extends RoundTrips {
  /** Round trips on write connections: START TRANSACTION, the callback's statements, COMMIT, and any fallback capture. */
  readonly roundTrips: number;
  /** Writes whose OK packets carried no position, so one extra query read it (see README). */
  readonly captureFallbacks: number;
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
  /** Always present: the position alone, without the probe's replication status reads. */
  observe(replicaId: string, context: { signal: AbortSignal }): Promise<P>;
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
/**
 * Shortest server-side wait, in seconds. MySQL's WAIT_FOR_EXECUTED_GTID_SET blocks forever with a
 * timeout of 0 (and MariaDB's MASTER_GTID_WAIT with a negative one): never send either.
 */
const MIN_WAIT_SECONDS = 0.001;

class MysqlClusterAdapter<P> implements MysqlAdapter<P> {
  readonly flavour: FlavourName;
  readonly codec: PositionCodec<P>;
  readonly replicas: readonly string[];
  /** Per node: reads (and waits), and probes (and KILL QUERY of aborted reads). */
  private readonly pools: PoolSet<Pool>;
  private readonly trips = new RoundTripCounters();
  private readonly setupTrips = tripCounter();
  private readonly writeSetup: SessionSetup;
  private readonly readSetup: SessionSetup;
  private readonly primarySamples: PrimarySamples<P>;
  private readonly lifecycle: AdapterLifecycle;
  private primaryIdentity: PrimaryIdentity | undefined;
  private readonly verdicts = new VerdictMemo<P>();
  private captureFallbacks = 0;

  constructor(
    private readonly flavourSpec: Flavour<P>,
    options: MysqlAdapterOptions,
  ) {
    this.flavour = flavourSpec.name;
    this.lifecycle = new AdapterLifecycle(flavourSpec.name);
    this.codec = flavourSpec.codec;
    this.primarySamples = new PrimarySamples(flavourSpec.codec);
    this.writeSetup = new SessionSetup(flavourSpec.writeSetupSql, this.setupTrips);
    this.readSetup = new SessionSetup(READ_ONLY_SETUP_SQL, this.setupTrips);
    const connectionLimit = validatePoolSize(options.poolSize);
    const monitor = {
      connectionLimit: MONITOR_POOL_SIZE,
      connectTimeout: MONITOR_CONNECT_TIMEOUT_MS,
      multipleStatements: flavourSpec.probeNeedsMultipleStatements,
    };
    this.pools = createPoolSet(options.primary, options.replicas, (source, role) => {
      const pool = mysql.createPool(
        buildPoolOptions(source, role === 'monitor' ? monitor : { connectionLimit }),
      );
      // Replicas usually refuse writes anyway (super_read_only); read-only sessions also cover a
      // replica that was promoted, and users with SUPER on a MariaDB read_only replica.
      if (role === 'write') this.writeSetup.attach(pool);
      if (role === 'read') this.readSetup.attach(pool);
      return pool;
    });
    this.replicas = this.pools.replicaIds;
  }

  async read<T>(
    target: string,
    fn: (connection: PoolConnection) => Promise<T>,
    context: ReadContext,
  ): Promise<ReadOutcome<T, P>> {
    this.lifecycle.assertOpen();
    const pools = this.pools.node(target);
    this.trips.read.operations++;
    return withConnection(
      pools.read,
      {
        signal: context.signal,
        counter: this.trips.read,
        setup: this.readSetup,
        cancel: killQueryOn(pools.monitor),
      },
      async (connection) => {
        const value = await fn(connection);
        // The router settles the position from a shared probe sent after the read (no round
        // trip here); asked to observe, read it after the callback on the same connection.
        if (context.observe === false) return { value };
        const [rows] = await connection.query(this.flavourSpec.positionSql);
        return { value, observed: this.position(rows, 'the position after a read') };
      },
    );
  }

  async write<T>(
    fn: (connection: PoolConnection) => Promise<T>,
    options: WriteOptions,
  ): Promise<CapturedWrite<T, P>> {
    this.lifecycle.assertOpen();
    this.trips.write.operations++;
    const managed = options.transaction ?? true;
    let seen: P | undefined;
    let unreadable = false;
    // Every OK packet of the lease, whichever driver API sent the statement: the GTIDs of all
    // the transactions this connection committed during the write.
    const onOk = (ok: OkPacket) => {
      try {
        const position = this.flavourSpec.positionFromOk(ok.stateChanges);
        if (position !== undefined) {
          seen = seen === undefined ? position : this.codec.merge(seen, position);
        }
      } catch {
        // Throwing here would break mysql2's packet handling; fall back to a query instead.
        unreadable = true;
      }
    };
    return withConnection(
      this.pools.primary.write,
      {
        counter: this.trips.write,
        onOk,
        setup: this.writeSetup,
        explainSetupFailure: (error) => this.flavourSpec.explainSetupFailure(error),
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
            throw new TransactionLeftOpenError(MysqlErrorCode.TransactionLeftOpen);
          }
        }
        const position =
          seen !== undefined && !unreadable ? seen : await this.captureFallback(connection);
        return { value, position };
      },
    );
  }

  async probe(replicaId: string, context: ProbeContext<P>): Promise<ProbeResult<P>> {
    this.lifecycle.assertOpen();
    const pools = this.pools.replica(replicaId);
    return withConnection(pools.monitor, { signal: context.signal }, async (connection) => {
      const [rows] = await connection.query(this.flavourSpec.probeSql);
      const facts = parseWith(() => this.flavourSpec.parseProbe(rows), 'the replica probe');
      const lagSeconds = this.lagSeconds(facts);
      return {
        applied: facts.applied,
        paused: facts.paused,
        ...(lagSeconds === undefined ? {} : { lagSeconds }),
      };
    });
  }

  /**
   * The replica's applied position alone: what settling a read and watching a catch-up need,
   * without the probe's `performance_schema` reads (200-260 µs per probe against 80-110 µs for
   * `SELECT @@global.gtid_executed`, measured on a MySQL 9.7 replica).
   */
  async observe(replicaId: string, context: { signal: AbortSignal }): Promise<P> {
    this.lifecycle.assertOpen();
    const pools = this.pools.replica(replicaId);
    return withConnection(pools.monitor, { signal: context.signal }, async (connection) => {
      const [rows] = await connection.query(this.flavourSpec.positionSql);
      return this.position(rows, 'the position of a replica');
    });
  }

  async probePrimary(context: { signal: AbortSignal }): Promise<P> {
    this.lifecycle.assertOpen();
    return withConnection(
      this.pools.primary.monitor,
      { signal: context.signal },
      async (connection) => {
        const [rows] = await connection.query(this.flavourSpec.primaryProbeSql);
        const facts = parseWith(
          () => this.flavourSpec.parsePrimaryProbe(rows),
          'the primary probe',
        );
        this.primaryIdentity = facts.identity;
        this.primarySamples.note(facts.position, Date.now());
        return facts.position;
      },
    );
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
    this.lifecycle.assertOpen();
    const pools = this.pools.replica(replicaId);
    if (waitCannotStart(timeoutMs, context.signal)) return { outcome: 'timeout' };
    const seconds = Math.max(MIN_WAIT_SECONDS, Math.ceil(timeoutMs) / 1000);
    const text = this.flavourSpec.formatForServer(position);
    return withConnection(
      pools.read,
      { signal: context.signal, setup: this.readSetup, cancel: killQueryOn(pools.monitor) },
      async (connection) => {
        let rows: unknown;
        try {
          [rows] = await connection.query(this.flavourSpec.waitSql, [text, seconds]);
        } catch (error) {
          if (isRetryableMysqlError(error) || context.signal.aborted) throw error;
          throw waitFailed(this.flavour, replicaId, error);
        }
        const row = parseWith(() => firstRow(rows, 'the wait'), 'the wait');
        const reached = parseWith(() => this.flavourSpec.waitReached(row['waited']), 'the wait');
        const observed = this.position(rows, 'the position after a wait');
        // The position read with the wait can lag the server's own "reached" by a moment.
        return waitVerdict(this.codec, observed, position, reached);
      },
    );
  };

  readonly classifyAgainstPrimary = (primary: P, required: P): PrimaryVerdict => {
    const identity = this.primaryIdentity;
    return this.verdicts.judge(primary, required, identity, () =>
      this.flavourSpec.classify(primary, required, identity),
    );
  };

  /**
   * MariaDB compares one sequence number per domain, so a new primary whose sequence passed a
   * lost GTID "covers" it: the verdict (which reads the primary's gtid_binlog_state) is asked
   * even then. MySQL GTID sets name every transaction, so `covered` is proof there.
   */
  get coveredNeedsVerdict(): boolean {
    return this.flavour === 'mariadb';
  }

  isRetryable(error: unknown): boolean {
    return isRetryableMysqlError(error);
  }

  roundTrips(): MysqlRoundTrips {
    return {
      ...this.trips.snapshot(),
      captureFallbacks: this.captureFallbacks,
      sessionSetups: this.setupTrips.operations,
      setupRoundTrips: this.setupTrips.roundTrips,
    };
  }

  close(): Promise<void> {
    return this.lifecycle.close(() => this.pools.end((pool) => pool.end()));
  }

  /**
   * No OK packet carried a position: the callback wrote nothing, or wrote on a path the adapter
   * cannot see. The node's whole applied position is then read on the committing connection
   * after the commit. It is a superset of this session's writes: correct, but it may make reads
   * wait for other sessions' writes too (it errs toward freshness).
   */
  private async captureFallback(connection: PoolConnection): Promise<P> {
    this.captureFallbacks++;
    const [rows] = await connection.query(this.flavourSpec.positionSql);
    return this.position(rows, 'the position after a write');
  }

  private position(rows: unknown, what: string): P {
    return parseWith(() => this.flavourSpec.parsePosition(firstRow(rows, what)['position']), what);
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
    if (!facts.replicating) return this.primarySamples.lagSeconds(facts.applied, Date.now());
    if (!facts.paused && facts.receiving && facts.ownLagSeconds !== undefined) {
      return facts.ownLagSeconds;
    }
    const estimate = this.primarySamples.lagSeconds(facts.applied, Date.now());
    if (facts.ownLagSeconds === undefined) return estimate;
    return estimate === undefined ? facts.ownLagSeconds : Math.max(facts.ownLagSeconds, estimate);
  }
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
    throw unexpected(`${what}: ${errorMessage(error)}`, error);
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
  requireOptionsObject(
    options,
    'createMysqlAdapter needs an options object with flavour, primary and replicas.',
  );
  validateOneOf('flavour', options.flavour, ['mysql', 'mariadb'], true);
  checkSource('primary', options.primary);
  validateReplicas(options.replicas, 'URLs or pool options', checkSource);
  validatePoolSize(options.poolSize);
}

function checkSource(name: string, source: unknown): asserts source is string | PoolOptions {
  if (typeof source === 'string') {
    try {
      parseConnectionUrl(source);
    } catch (error) {
      throw new ConfigError(
        `${name} is not a usable connection URL (${errorMessage(error)}); expected mysql://user:password@host:port/database.`,
      );
    }
    return;
  }
  if (source === null || typeof source !== 'object') {
    throw new ConfigError(`${name} must be a connection URL or mysql2 pool options.`);
  }
}
