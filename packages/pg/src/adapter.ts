import { ConfigError } from '@tidemark/core';
import type {
  PositionCodec,
  ProbeContext,
  ProbeResult,
  ReadOutcome,
  WriteOutcome,
} from '@tidemark/core/adapter';
import {
  type Adapter,
  AdapterLifecycle,
  type CapturedWrite,
  createPoolSet,
  errorMessage,
  MONITOR_CONNECT_TIMEOUT_MS,
  MONITOR_POOL_SIZE,
  type PoolSet,
  PRIMARY,
  type PrimaryVerdict,
  type ReadContext,
  RoundTripCounters,
  type RoundTrips,
  requireOptionsObject,
  TransactionLeftOpenError,
  urlOrObject,
  validateNonNegative,
  validateOneOf,
  validatePoolSize,
  validateReplicas,
  WAIT_UNSUPPORTED,
  type WaitOutcome,
  type WriteOptions,
  waitCannotStart,
  waitVerdict,
} from '@tidemark/core/adapter';
import pg from 'pg';
import { createPgCodec, type PgPosition } from './codec.js';
import { PgAdapterError, PgErrorCode } from './errors.js';
import { transactionIdle, withClient } from './lease.js';
import { formatLsn } from './lsn.js';
import { driverCanPipeline, PipelinedCapture } from './pipelined-capture.js';
import { buildPoolConfig } from './pool-config.js';
import { isRetryablePgError } from './retryable.js';
import { nodePosition, primaryPosition, unexpected } from './rows.js';
import {
  AUTOCOMMIT_CAPTURE_SQL,
  COMMIT_AND_CAPTURE_SQL,
  historyFilePath,
  NODE_POSITION_SQL,
  OBSERVE_SQL,
  PRIMARY_POSITION_SQL,
  PRIMARY_PROBE_SQL,
  READ_HISTORY_FILE_SQL,
  REPLICA_PROBE_SQL,
  WAIT_FOR_LSN_MIN_VERSION,
  waitForLsnSql,
} from './sql.js';
import { TimelineHistory } from './timeline-history.js';
import { WAL_GEOMETRY_SQL, type WalGeometry, walGeometryFromRow } from './wal-geometry.js';

export interface PgAdapterOptions {
  /** The primary: a connection URL or a node-postgres pool config. */
  primary: string | pg.PoolConfig;
  /** Replica id -> URL or pool config. Ids appear in route decisions; `primary` is reserved. */
  replicas: Record<string, string | pg.PoolConfig>;
  /**
   * `auto` (default): wait on replicas server-side with `WAIT FOR LSN` when the servers are
   * PostgreSQL 19 or newer (detected from the probes); older servers are polled by the router.
   * `poll`: never wait server-side.
   */
  wait?: 'auto' | 'poll';
  /**
   * With `WAIT FOR LSN`: how long a bounded wait first watches the replica with fast probes
   * before it waits server-side (ms). WAIT FOR LSN wakes later than a sub-millisecond probe finds
   * the same LSN, so waits of about one replay lag are served faster by probes; longer waits
   * (replay paused or far behind) then hold one server-side wait. Default 5.
   */
  probeBeforeWaitMs?: number;
  /** Max connections per pool (unless a pool config sets `max`). Default 10. */
  poolSize?: number;
  /**
   * Send the monitor's probes as named prepared statements (default true): parsed and planned
   * once per probe connection, they cost the server about a third of the same text sent each
   * time (measured on PostgreSQL 18: 99 us instead of 210-370 us per replica probe). Set false
   * behind a pooler that cannot keep prepared statements (PgBouncer before 1.21 in transaction
   * mode).
   */
  preparedProbes?: boolean;
  /**
   * `transaction: false` writes: send the position query right behind each statement of the
   * callback without waiting for its answer (node-postgres pipelining, 8.23+), so the write's
   * position arrives with the last statement's answer: no round trip of its own and no shared
   * primary probe to wait for before the token can go out. The price is one more statement per
   * write on the primary, paid even when nobody needs the position: measured on PostgreSQL 18,
   * autocommit INSERTs alone ran at 0.68-0.85x the raw driver's rate at concurrency 1 and
   * 0.50-0.71x at 16, against 0.93-1.02x and 0.90-0.96x without it (see the README). Worth it
   * where nearly every write is followed by a token going out (a request that writes, then
   * responds). Default false: the position then comes from a primary probe after the write,
   * shared by every write that finished before it was sent, and only when it is needed. Ignored
   * on node-postgres versions that cannot pipeline.
   */
  pipelineCapture?: boolean;
}

/**
 * Counters for measuring what the adapter costs (one round trip = one `client.query` call). Write
 * round trips are BEGIN, the callback's queries, COMMIT + capture; read round trips are the
 * callback's queries and the observation after them.
 */
export type PgRoundTrips = RoundTrips;

export interface PgAdapter extends Adapter<PgPosition, pg.PoolClient> {
  /**
   * Run `fn` on the primary and capture the position after the commit. With `capture: false`
   * an autocommit write (`transaction: false`) skips the capture query and returns no position
   * (the router settles it from a shared primary probe); otherwise the position is always there.
   */
  write<T>(
    fn: (connection: pg.PoolClient) => Promise<T>,
    options: WriteOptions & { capture: false },
  ): Promise<WriteOutcome<T, PgPosition>>;
  write<T>(
    fn: (connection: pg.PoolClient) => Promise<T>,
    options: WriteOptions,
  ): Promise<CapturedWrite<T, PgPosition>>;
  /** Timeline switches learned from the servers; the codec consults it. */
  readonly history: TimelineHistory;
  /**
   * Always present. Waits server-side with `WAIT FOR LSN` once a probe showed PostgreSQL 19 or
   * newer and `wait` is `auto`; until then, on older servers and with `wait: 'poll'` it answers
   * `unsupported` at once and the router polls the probes.
   */
  readonly waitFor: NonNullable<Adapter<PgPosition, pg.PoolClient>['waitFor']>;
  /**
   * Always present: a replica's applied position and timeline alone, without the probe's pause
   * state, lag, version and control-file read. The router settles reads and watches catch-ups
   * with it.
   */
  observe(replicaId: string, context: { signal: AbortSignal }): Promise<PgPosition>;
  roundTrips(): PgRoundTrips;
}

/**
 * Create the PostgreSQL adapter for a {@link Router}: one primary and any number of streaming
 * replicas. Pools are created now but connect lazily.
 *
 * Reads run on connections whose sessions are read-only (`default_transaction_read_only`, set at
 * connection startup), on replicas and on the primary fallback alike. Writes capture
 * `pg_current_wal_insert_lsn()` and the timeline after the commit, on the committing connection.
 *
 * @throws ConfigError on invalid options.
 */
export function createPgAdapter(options: PgAdapterOptions): PgAdapter {
  return new PgClusterAdapter(options);
}

/** How long to leave an unreadable history file alone before trying again. */
const HISTORY_RETRY_MS = 5000;

class PgClusterAdapter implements PgAdapter {
  readonly history = new TimelineHistory();
  readonly codec: PositionCodec<PgPosition> = createPgCodec(this.history);
  readonly replicas: readonly string[];
  private readonly waitMode: 'auto' | 'poll';
  readonly probeBeforeWaitMs: number;
  private readonly preparedProbes: boolean;
  private readonly pipelineCapture: boolean;
  /**
   * A replica read asked to observe (`observe: true`, what the router passes with
   * `settle: 'immediate'`) sends the position query behind its statements, answered in the same
   * round trip; true when the installed node-postgres can pipeline.
   */
  readonly observesWithRead = driverCanPipeline();
  private readonly pools: PoolSet<pg.Pool>;
  private readonly trips = new RoundTripCounters();
  private readonly lifecycle = new AdapterLifecycle('PostgreSQL');
  /** Highest timeline seen per replica: the fallback label while its WAL receiver is down. */
  private readonly lastTimeline = new Map<string, number>();
  private readonly historyRetryAt = new Map<number, number>();
  private geometry: WalGeometry | undefined;
  private geometryTried = false;
  private geometryLearning: Promise<void> | undefined;
  /**
   * Set once a probe shows PostgreSQL 19 or newer (which has `WAIT FOR LSN`). All nodes of a
   * physical replication cluster run the same major version, so one answer covers every replica.
   */
  private serverCanWait = false;

  constructor(options: PgAdapterOptions) {
    validateOptions(options);
    const max = validatePoolSize(options.poolSize);
    this.waitMode = options.wait ?? 'auto';
    this.probeBeforeWaitMs = options.probeBeforeWaitMs ?? 5;
    this.preparedProbes = options.preparedProbes ?? true;
    this.pipelineCapture = options.pipelineCapture ?? false;
    const monitor = {
      readOnly: true,
      max: MONITOR_POOL_SIZE,
      connectionTimeoutMillis: MONITOR_CONNECT_TIMEOUT_MS,
      applicationName: 'tidemark-monitor',
    };
    this.pools = createPoolSet(options.primary, options.replicas, (source, role) =>
      createPool(
        buildPoolConfig(
          source,
          // Replicas are read-only anyway; the option also covers a replica that was promoted.
          role === 'monitor' ? monitor : { readOnly: role === 'read', max },
        ),
      ),
    );
    this.replicas = this.pools.replicaIds;
  }

  async read<T>(
    target: string,
    fn: (connection: pg.PoolClient) => Promise<T>,
    context: ReadContext,
  ): Promise<ReadOutcome<T, PgPosition>> {
    this.lifecycle.assertOpen();
    const pool = this.pools.node(target).read;
    this.trips.read.operations++;
    return withClient(
      pool,
      { signal: context.signal, counter: this.trips.read },
      async (client) => {
        // Asked explicitly, on a replica, with a driver that pipelines: the position query rides
        // behind each of the callback's statements, and the one behind the last is the answer.
        const pipelined =
          context.observe === true && target !== PRIMARY
            ? PipelinedCapture.install(
                client,
                this.probeStatement('tidemark_replica_observe', OBSERVE_SQL),
              )
            : undefined;
        if (pipelined) return this.readObservedWith(target, client, fn, pipelined);
        const value = await fn(client);
        // The router settles the position from a shared probe sent after the read (no round trip
        // here); asked to observe, take it on the same connection: at least as new as what it saw.
        if (context.observe === false) return { value };
        const observed = await this.observeOn(target, client);
        return { value, observed };
      },
    );
  }

  write<T>(
    fn: (connection: pg.PoolClient) => Promise<T>,
    options: WriteOptions & { capture: false },
  ): Promise<WriteOutcome<T, PgPosition>>;
  write<T>(
    fn: (connection: pg.PoolClient) => Promise<T>,
    options: WriteOptions,
  ): Promise<CapturedWrite<T, PgPosition>>;
  async write<T>(
    fn: (connection: pg.PoolClient) => Promise<T>,
    options: WriteOptions,
  ): Promise<WriteOutcome<T, PgPosition>> {
    this.lifecycle.assertOpen();
    this.trips.write.operations++;
    // Positions are normalised with the WAL page layout: learn it before the first capture (once,
    // on the monitor pool), or a commit ending on a page boundary could wait for more WAL.
    if (this.geometry === undefined && !this.geometryTried) await this.learnGeometryOnce();
    const managed = options.transaction ?? true;
    const capture = options.capture ?? true;
    return withClient(this.pools.primary.write, { counter: this.trips.write }, (client) =>
      managed ? this.writeInTransaction(client, fn) : this.writeAutocommit(client, fn, capture),
    );
  }

  async probe(
    replicaId: string,
    context: ProbeContext<PgPosition>,
  ): Promise<ProbeResult<PgPosition>> {
    this.lifecycle.assertOpen();
    const pools = this.pools.replica(replicaId);
    return withClient(pools.monitor, { signal: context.signal }, async (client) => {
      const row = (
        await client.query(this.probeStatement('tidemark_replica_probe', REPLICA_PROBE_SQL))
      ).rows[0] as Record<string, unknown>;
      this.noteVersion(row?.['version_num']);
      const applied = this.replicaPosition(replicaId, row);
      await this.learnHistory(applied.timeline, client);
      const lagSeconds = finiteNumber(row['lag_seconds']);
      const lagBytes = this.lagBytes(context.primary, applied);
      return {
        applied,
        paused: row['pause_state'] === 'paused' || row['pause_state'] === 'pause requested',
        ...(lagSeconds === undefined ? {} : { lagSeconds: Math.max(0, lagSeconds) }),
        ...(lagBytes === undefined ? {} : { lagBytes }),
      };
    });
  }

  /**
   * The replica's position alone: what settling a read and watching a catch-up need. The probe
   * also reads the pause state, the lag, the version and the last restartpoint's timeline (from
   * the control file on disk); this asks the replay LSN and the WAL receiver's timeline only
   * (measured on a PostgreSQL 18 replica, prepared, 2,000 queries per round: 91-106 µs against
   * the probe's 108-123 µs on a quiet machine, 30-39 against 48-90 µs on a busy one; `SELECT 1`
   * 76-91 µs quiet). While the receiver is down the timeline is the
   * last one seen on this replica, never above the real one: at worst the position looks like
   * another history, and the router then probes in full.
   */
  async observe(replicaId: string, context: { signal: AbortSignal }): Promise<PgPosition> {
    this.lifecycle.assertOpen();
    const pools = this.pools.replica(replicaId);
    return withClient(pools.monitor, { signal: context.signal }, async (client) => {
      const row = (await client.query(this.probeStatement('tidemark_replica_observe', OBSERVE_SQL)))
        .rows[0] as Record<string, unknown> | undefined;
      const position = this.replicaPosition(replicaId, row);
      await this.learnHistory(position.timeline, client);
      return position;
    });
  }

  /** A probe query, named (prepared once per monitor connection) unless `preparedProbes` is off. */
  private probeStatement(name: string, text: string): string | pg.QueryConfig {
    return this.preparedProbes ? { name, text } : text;
  }

  async probePrimary(context: { signal: AbortSignal }): Promise<PgPosition> {
    this.lifecycle.assertOpen();
    return withClient(this.pools.primary.monitor, { signal: context.signal }, async (client) => {
      if (this.geometry === undefined) await this.learnGeometry(client);
      const row = (
        await client.query(this.probeStatement('tidemark_primary_probe', PRIMARY_PROBE_SQL))
      ).rows[0] as Record<string, unknown>;
      this.noteVersion(row?.['version_num']);
      const position = primaryPosition(row, this.geometry);
      await this.learnHistory(position.timeline, client);
      return position;
    });
  }

  /**
   * Timelines only grow, and only the primary starts new ones: a position on a timeline above
   * the primary's was never issued by this cluster (`impossible`: forged, or another cluster's),
   * not lost. Below that the history-aware codec decides: past a switch point is another history.
   */
  classifyAgainstPrimary(primary: PgPosition, required: PgPosition): PrimaryVerdict {
    if (required.timeline > primary.timeline) return 'impossible';
    const relation = this.codec.compare(primary, required);
    if (relation === 'covered') return 'ok';
    return relation === 'other-history' ? 'other-history' : 'impossible';
  }

  isRetryable(error: unknown): boolean {
    return isRetryablePgError(error);
  }

  roundTrips(): PgRoundTrips {
    return this.trips.snapshot();
  }

  close(): Promise<void> {
    return this.lifecycle.close(() => this.pools.end((pool) => pool.end()));
  }

  /** BEGIN, the callback, then COMMIT and the capture in one message: no extra round trip. */
  private async writeInTransaction<T>(
    client: pg.PoolClient,
    fn: (connection: pg.PoolClient) => Promise<T>,
  ): Promise<WriteOutcome<T, PgPosition>> {
    await client.query('BEGIN');
    let value: T;
    try {
      value = await fn(client);
    } catch (error) {
      await rollbackQuietly(client);
      throw error;
    }
    const results = (await client.query(COMMIT_AND_CAPTURE_SQL)) as unknown;
    if (!Array.isArray(results) || results.length !== 2) {
      throw unexpected('COMMIT and capture did not return two results');
    }
    const [commit, capture] = results as [pg.QueryResult, pg.QueryResult];
    if (commit.command !== 'COMMIT') {
      // PostgreSQL answers COMMIT of a failed transaction with ROLLBACK, not an error.
      throw new PgAdapterError(
        PgErrorCode.RolledBack,
        'The write was rolled back at COMMIT because a statement inside the transaction failed and the callback went on. Nothing was written: let the error propagate from the callback, or use a savepoint if you mean to recover from it.',
      );
    }
    return { value, position: primaryPosition(capture.rows[0], this.geometry) };
  }

  /**
   * The callback commits by itself. Capturing after it costs one more query on this connection,
   * so when the caller allows it (`capture: false`) and the driver says the session is outside
   * any transaction, the write returns at once and the router settles its position from a shared
   * primary probe. Drivers that do not report the transaction status always capture (the query
   * also proves that nothing was left open).
   */
  private async writeAutocommit<T>(
    client: pg.PoolClient,
    fn: (connection: pg.PoolClient) => Promise<T>,
    capture: boolean,
  ): Promise<WriteOutcome<T, PgPosition>> {
    const pipelined = this.pipelineCapture
      ? PipelinedCapture.install(client, AUTOCOMMIT_CAPTURE_SQL)
      : undefined;
    const { value, row: captured } = pipelined
      ? await pipelined.around(() => fn(client))
      : { value: await fn(client), row: undefined };
    if (captured !== undefined) {
      if (captured['in_transaction'] === true || transactionIdle(client) === false) {
        await this.refuseOpenTransaction(client);
      }
      return { value, position: primaryPosition(captured, this.geometry) };
    }
    const idle = transactionIdle(client);
    if (idle === false) await this.refuseOpenTransaction(client);
    if (idle === true && !capture) return { value, position: undefined };
    const row = (await client.query(AUTOCOMMIT_CAPTURE_SQL)).rows[0] as Record<string, unknown>;
    if (row?.['in_transaction'] === true) await this.refuseOpenTransaction(client);
    return { value, position: primaryPosition(row, this.geometry) };
  }

  private async refuseOpenTransaction(client: pg.PoolClient): Promise<never> {
    await rollbackQuietly(client);
    throw new TransactionLeftOpenError(PgErrorCode.TransactionLeftOpen);
  }

  /**
   * A replica read with its position pipelined behind it. The replica's replay position only moves
   * forward (on one timeline), so the position read after the callback's last statement covers
   * everything the callback saw. No statement, or a portal query that turned pipelining off: the
   * position is read after the callback as before.
   */
  private async readObservedWith<T>(
    target: string,
    client: pg.PoolClient,
    fn: (connection: pg.PoolClient) => Promise<T>,
    pipelined: PipelinedCapture,
  ): Promise<ReadOutcome<T, PgPosition>> {
    const { value, row } = await pipelined.around(() => fn(client));
    if (row === undefined) return { value, observed: await this.observeOn(target, client) };
    const observed = this.replicaPosition(target, row);
    await this.learnHistory(observed.timeline, client);
    return { value, observed };
  }

  private async observeOn(target: string, client: pg.PoolClient): Promise<PgPosition> {
    if (target === PRIMARY) {
      return primaryPosition((await client.query(PRIMARY_POSITION_SQL)).rows[0], this.geometry);
    }
    return this.replicaPosition(target, (await client.query(NODE_POSITION_SQL)).rows[0]);
  }

  private replicaPosition(id: string, row: Record<string, unknown> | undefined): PgPosition {
    const position = nodePosition(row, this.lastTimeline.get(id), this.geometry);
    if (position.timeline > (this.lastTimeline.get(id) ?? 0)) {
      this.lastTimeline.set(id, position.timeline);
    }
    return position;
  }

  /**
   * WAIT FOR LSN (PostgreSQL 19+) bounded server-side, then the replica's position in the same
   * message, so the verdict also checks the timeline: WAIT FOR LSN compares LSNs only, and a
   * replica replaying another history past that LSN must not count as caught up. An arrow
   * function, so the router may call it detached from the adapter.
   */
  readonly waitFor = async (
    replicaId: string,
    position: PgPosition,
    timeoutMs: number,
    context: { signal: AbortSignal },
  ): Promise<WaitOutcome<PgPosition>> => {
    this.lifecycle.assertOpen();
    const pools = this.pools.replica(replicaId);
    if (this.waitMode === 'poll' || !this.serverCanWait) return WAIT_UNSUPPORTED;
    if (waitCannotStart(timeoutMs, context.signal)) return { outcome: 'timeout' };
    const sql = waitForLsnSql(formatLsn(position.lsn), Math.max(1, Math.ceil(timeoutMs)));
    return withClient(pools.read, { signal: context.signal }, async (client) => {
      const results = (await client.query(`${sql}; ${NODE_POSITION_SQL}`)) as unknown;
      if (!Array.isArray(results) || results.length !== 2) {
        throw unexpected('WAIT FOR LSN and position did not return two results');
      }
      const [wait, observation] = results as [pg.QueryResult, pg.QueryResult];
      const status = wait.rows[0]?.['status'];
      if (status !== 'success' && status !== 'timeout' && status !== 'not in recovery') {
        throw unexpected(`WAIT FOR LSN status ${String(status)}`);
      }
      return waitVerdict(
        this.codec,
        this.replicaPosition(replicaId, observation.rows[0]),
        position,
      );
    });
  };

  private lagBytes(primary: PgPosition | undefined, applied: PgPosition): number | undefined {
    if (primary === undefined) return undefined;
    const relation = this.codec.compare(primary, applied);
    if (relation === 'covered') return Number(primary.lsn - applied.lsn);
    // The primary sample is older than the replica's answer: nothing is missing.
    return relation === 'behind' ? 0 : undefined;
  }

  /** Read the history file of a timeline not seen before; failures leave it unknown (safe). */
  private async learnHistory(timeline: number, client: pg.PoolClient): Promise<void> {
    if (this.history.knows(timeline)) return;
    const retryAt = this.historyRetryAt.get(timeline);
    if (retryAt !== undefined && Date.now() < retryAt) return;
    const path = historyFilePath(timeline);
    try {
      const { rows } = await client.query(READ_HISTORY_FILE_SQL, [path]);
      this.history.recordHistoryFile(timeline, String(rows[0]?.['content'] ?? ''));
    } catch (error) {
      if (retryAt === undefined) {
        process.emitWarning(
          `Tidemark could not read ${path} (${errorMessage(error)}); until it can, sessions with positions from before the failover are treated as another history. Grant the adapter's role EXECUTE on pg_read_file(text) or membership in pg_read_server_files.`,
          { code: 'TIDEMARK_PG_HISTORY' },
        );
      }
      this.historyRetryAt.set(timeline, Date.now() + HISTORY_RETRY_MS);
    }
  }

  /** One attempt, shared by the writes that start meanwhile; probes of the primary try again. */
  private learnGeometryOnce(): Promise<void> {
    this.geometryLearning ??= withClient(this.pools.primary.monitor, {}, (client) =>
      this.learnGeometry(client),
    )
      .catch(() => undefined)
      .finally(() => {
        this.geometryTried = true;
        this.geometryLearning = undefined;
      });
    return this.geometryLearning;
  }

  private async learnGeometry(client: pg.PoolClient): Promise<void> {
    try {
      this.geometry = walGeometryFromRow((await client.query(WAL_GEOMETRY_SQL)).rows[0] ?? {});
    } catch {
      // Without it positions are not normalised, which costs at most a wait, never correctness.
    }
  }

  private noteVersion(value: unknown): void {
    if (typeof value !== 'number' || !Number.isInteger(value)) return;
    if (value >= WAIT_FOR_LSN_MIN_VERSION) this.serverCanWait = true;
  }
}

function createPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  // pg-pool emits 'error' when an idle connection dies (a server restart); unhandled it would
  // crash the process. The next checkout gets a fresh connection, so nothing else is needed.
  pool.on('error', () => undefined);
  // A connection error can arrive in the same read that completes a checkout, before anyone
  // listens on the client (pg-pool drops its idle listener at checkout): an 'error' event with no
  // listener would crash the process (seen as an uncaught 57P01 when a frozen primary was killed).
  // The query in flight still rejects, so the error is never lost; this listener only keeps the
  // event from being fatal.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return pool;
}

async function rollbackQuietly(client: pg.PoolClient): Promise<void> {
  try {
    await client.query('ROLLBACK');
  } catch {
    // The connection is discarded on release when it is not back outside a transaction.
  }
}

function finiteNumber(value: unknown): number | undefined {
  const number = typeof value === 'number' ? value : Number.NaN;
  return Number.isFinite(number) ? number : undefined;
}

const checkSource: (name: string, source: unknown) => asserts source is string | object =
  urlOrObject('a connection URL or a node-postgres pool config');

function validateOptions(options: PgAdapterOptions): void {
  requireOptionsObject(
    options,
    'createPgAdapter needs an options object with primary and replicas.',
  );
  checkSource('primary', options.primary);
  validateReplicas(options.replicas, 'URLs or pool configs', checkSource);
  validatePoolSize(options.poolSize);
  validateOneOf('wait', options.wait, ['auto', 'poll']);
  validateNonNegative('probeBeforeWaitMs', options.probeBeforeWaitMs);
  for (const name of ['preparedProbes', 'pipelineCapture'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean') {
      throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(options[name])}.`);
    }
  }
}
