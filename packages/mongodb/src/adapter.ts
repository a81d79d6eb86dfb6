import { ConfigError, PRIMARY, TidemarkError } from '@tidemark/core';
import {
  type Adapter,
  AdapterLifecycle,
  type CapturedWrite,
  createPoolSet,
  errorMessage,
  type PoolSet,
  type PositionCodec,
  type PrimaryVerdict,
  type ProbeContext,
  type ProbeResult,
  type ReadContext,
  type ReadOutcome,
  RoundTripCounters,
  type RoundTrips,
  requireOptionsObject,
  TransactionLeftOpenError,
  untilAborted,
  validateNonEmptyString,
  validateNonNegative,
  validateOneOf,
  validateReplicas,
  type WaitOutcome,
  type WriteOptions,
  waitCannotStart,
} from '@tidemark/core/adapter';
import {
  BSON,
  type ClientSession,
  type ClusterTime,
  type Db,
  MongoClient,
  type MongoClientOptions,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';
import { MajorityWriteConcernRequiredError, MongoErrorCode, unexpectedReply } from './errors.js';
import { HistoryBook, historyAwareCodec } from './history.js';
import { directMemberUri } from './member-uri.js';
import { compareTimes, type MongoPosition, type MongoTime } from './position.js';
import { PrimaryTerms } from './primary-terms.js';
import { readOnlyClient } from './read-only.js';
import { SessionTrips } from './session-trips.js';
import { WriteTerms } from './write-terms.js';

/** What read and write callbacks receive. Pass `{ session }` to every operation. */
export interface MongoConnection {
  readonly client: MongoClient;
  readonly db: Db;
  /** Causally consistent session whose operationTime becomes the position. */
  readonly session: ClientSession;
  /**
   * The read's `ReadContext.signal` (undefined for writes): pass it to driver operations that
   * accept one. The adapter stops waiting for the callback when it aborts either way.
   */
  readonly signal?: AbortSignal | undefined;
}

export interface MongoAdapterOptions {
  /** Replica-set URI (`mongodb://h1,h2,h3/?replicaSet=rs`); writes and primary reads use it. */
  uri: string;
  /** Database handed to callbacks as `connection.db`. */
  database: string;
  /** Replica id -> `host:port` of that member. Reads routed there use a direct connection. */
  replicas: Readonly<Record<string, string>>;
  clientOptions?: MongoClientOptions;
  /**
   * Accept a write concern other than `majority`. You lose: an acknowledged write may be rolled
   * back after a failover, and tokens then name writes that no longer exist.
   */
  allowNonMajorityWrites?: boolean;
  /**
   * Read concern of routed reads and waits. `majority` (default) only sees majority-committed
   * data, so probes use each member's `majorityOpTime`; `local` uses `opTime`.
   */
  readConcernLevel?: 'majority' | 'local';
  /** Collection the bounded wait queries (it may not exist). Default `tidemark_wait`. */
  waitCollection?: string;
  /**
   * Answer probes from the driver's own heartbeats (`hello` replies carry lastWrite) when the
   * newest one is at most this old, so the monitor costs no extra round trips. The driver polls
   * every `heartbeatFrequencyMS` (default 10 s, minimum 500 ms): set it below this age to benefit.
   * Default 1000 ms; 0 always probes over the network.
   */
  heartbeatMaxAgeMs?: number;
}

/** How the adapter's probes were answered since it started. */
export interface MongoAdapterStats {
  /** Probes answered from a driver heartbeat: no round trip. */
  readonly probesFromHeartbeats: number;
  /** Probes that sent their own `hello`. */
  readonly probesOverNetwork: number;
}

/**
 * What the adapter cost: commands sent in the sessions of reads and writes (seen through the
 * driver's command monitoring; one command is one round trip), and how probes were answered.
 */
export interface MongoRoundTrips extends RoundTrips, MongoAdapterStats {}

/** The adapter for a {@link Router}: positions are operationTimes with term and cluster time. */
export interface MongoAdapter extends Adapter<MongoPosition, MongoConnection> {
  /**
   * Always present: a `find` with `afterClusterTime` and `maxTimeMS` on the member. The context
   * is optional here (the router always passes one).
   */
  readonly waitFor: (
    replicaId: string,
    position: MongoPosition,
    timeoutMs: number,
    context?: { signal: AbortSignal },
  ) => Promise<WaitOutcome<MongoPosition>>;
  /** The primary's newest write; the context is optional here. */
  probePrimary(context?: { signal: AbortSignal }): Promise<MongoPosition>;
  readonly classifyAgainstPrimary: NonNullable<
    Adapter<MongoPosition, MongoConnection>['classifyAgainstPrimary']
  >;
  write<T>(
    fn: (connection: MongoConnection) => Promise<T>,
    options?: WriteOptions,
  ): Promise<CapturedWrite<T, MongoPosition>>;
  roundTrips(): MongoRoundTrips;
  /** @deprecated Use {@link MongoAdapter.roundTrips}, which reports the same probe counts. */
  stats(): MongoAdapterStats;
}

/**
 * Create the MongoDB adapter for a {@link Router}: writes on the replica-set client, reads on a
 * direct client per member. Clients are created now and connect lazily.
 *
 * @throws ConfigError on invalid options (MajorityWriteConcernRequiredError for a write concern
 *   other than `majority` without `allowNonMajorityWrites`).
 */
export function createMongoAdapter(options: MongoAdapterOptions): MongoAdapter {
  return new MongoClusterAdapter(options);
}

/** Server error codes that mean "this member cannot serve now", worth one retry elsewhere. */
const RETRYABLE_CODES = new Set([6, 7, 89, 91, 189, 9001, 10107, 11600, 11602, 13435, 13436]);
const MAX_TIME_EXPIRED = 50;
/** How long past its own maxTimeMS a server-side wait may take before the client gives up. */
const WAIT_GRACE_MS = 100;

interface HelloLastWrite {
  opTime?: { ts?: BSON.Timestamp; t?: number | BSON.Long };
  majorityOpTime?: { ts?: BSON.Timestamp; t?: number | BSON.Long };
}

/**
 * Tidemark adapter for a MongoDB replica set: positions are operationTimes (with term and
 * signed cluster time), captured from the write's own reply; reads go to the member the router
 * chose over a direct connection; bounded waits use afterClusterTime with maxTimeMS.
 */
class MongoClusterAdapter implements MongoAdapter {
  /**
   * {@link mongoPositionCodec} plus history: after an election, a position from an earlier term
   * counts as covered only once the primary's oplog showed it survived.
   */
  readonly codec: PositionCodec<MongoPosition>;
  readonly replicas: readonly string[];
  /** The replica-set client: writes, primary reads and probes, oplog lookups. */
  private readonly primary: ClientSlot;
  /** The replica-set client serves every role on the primary; one direct client per member. */
  private readonly clients: PoolSet<ClientSlot>;
  private readonly lifecycle = new AdapterLifecycle('MongoDB');
  private readonly trips = new RoundTripCounters();
  private readonly sessionTrips = new SessionTrips();
  private readonly database: string;
  private readonly readConcernLevel: 'majority' | 'local';
  private readonly waitCollection: string;
  /** Newest term seen in a primary probe, for writes whose reply named none. */
  private knownTerm = 0;
  private readonly writeTerms: WriteTerms;
  /** Which primary ran a primary read, so its observed position carries that primary's term. */
  private readonly primaryTerms = new PrimaryTerms();
  private readonly history: HistoryBook;
  private readonly heartbeatMaxAgeMs: number;
  /** Latest heartbeat position per replica id, with the time it arrived. */
  private readonly heartbeats = new Map<string, { position: MongoPosition; at: number }>();
  private probesFromHeartbeats = 0;
  private probesOverNetwork = 0;

  constructor(options: MongoAdapterOptions) {
    validateOptions(options);
    this.database = options.database;
    this.readConcernLevel = options.readConcernLevel ?? 'majority';
    this.waitCollection = options.waitCollection ?? 'tidemark_wait';
    this.writeTerms = new WriteTerms();
    this.history = new HistoryBook((time) => this.oplogEntryAt(time));
    this.codec = historyAwareCodec(this.history);
    this.heartbeatMaxAgeMs = options.heartbeatMaxAgeMs ?? 1000;
    const hostToId = new Map(
      Object.entries(options.replicas).map(([id, host]) => [host.toLowerCase(), id]),
    );
    // Every client, and every replacement of one, gets the same listeners.
    const listened = (client: MongoClient): MongoClient => {
      this.sessionTrips.listen(client);
      if (this.heartbeatMaxAgeMs > 0) this.listenToHeartbeats(client, hostToId);
      return client;
    };
    this.primary = new ClientSlot(() => {
      const client = mongoClient(options.uri, { ...options.clientOptions, monitorCommands: true });
      this.writeTerms.listen(client);
      this.primaryTerms.listen(client);
      return listened(client);
    });
    const w = this.primary.client.options.writeConcern?.w;
    if (w !== 'majority' && options.allowNonMajorityWrites !== true) {
      void this.primary.close().catch(() => undefined);
      throw new MajorityWriteConcernRequiredError(w);
    }
    const { replicaSet: _ignored, ...memberOptions } = options.clientOptions ?? {};
    const members = new Map<string, ClientSlot>();
    const memberSlot = (id: string, host: string): ClientSlot => {
      let slot = members.get(id);
      if (!slot) {
        slot = new ClientSlot(() =>
          listened(
            mongoClient(directMemberUri(options.uri, host), {
              ...memberOptions,
              directConnection: true,
              readConcern: { level: this.readConcernLevel },
              // Commands in read sessions are counted as round trips (see roundTrips()).
              monitorCommands: true,
            }),
          ),
        );
        members.set(id, slot);
      }
      return slot;
    };
    this.clients = createPoolSet<string | undefined, ClientSlot>(
      undefined,
      options.replicas,
      (host, _role, id) => (host === undefined ? this.primary : memberSlot(id, host)),
    );
    this.replicas = this.clients.replicaIds;
  }

  /** Commands of reads and writes, and how probes were answered (heartbeat cache or own hello). */
  roundTrips(): MongoRoundTrips {
    return { ...this.trips.snapshot(), ...this.stats() };
  }

  stats(): MongoAdapterStats {
    return {
      probesFromHeartbeats: this.probesFromHeartbeats,
      probesOverNetwork: this.probesOverNetwork,
    };
  }

  /**
   * Runs `fn` on the chosen member, read-only (write helpers throw {@link WriteInReadError}).
   * The session starts at the position the read must see, so the driver sends it as
   * `afterClusterTime` and the member itself enforces it.
   */
  async read<T>(
    target: string,
    fn: (connection: MongoConnection) => Promise<T>,
    context: ReadContext<MongoPosition>,
  ): Promise<ReadOutcome<T, MongoPosition>> {
    this.lifecycle.assertOpen();
    const slot = this.clients.node(target).read;
    const client = slot.client;
    const { signal } = context;
    signal?.throwIfAborted();
    this.trips.read.operations++;
    const session = client.startSession({ causalConsistency: true });
    this.sessionTrips.start(session, this.trips.read);
    const onPrimary = target === PRIMARY;
    if (onPrimary) this.primaryTerms.watch(session.id);
    try {
      const required = context.required;
      if (required) {
        if (required.clusterTime) session.advanceClusterTime(toClusterTime(required.clusterTime));
        session.advanceOperationTime(toTimestamp(required.time));
      }
      const readOnly = readOnlyClient(client);
      const connection = { client: readOnly, db: readOnly.db(this.database), session, signal };
      const value = await untilAborted(fn(connection), signal);
      // On the primary, the term of the member that ran the read: the replica-set client may
      // have followed an election the router has not sampled yet, and the term is what tells the
      // router so (its observed position then does not cover an earlier term's write until the
      // new primary's oplog confirms it). A replica's newest entry has no term known here.
      const term = onPrimary ? (this.primaryTerms.termOf(session.id) ?? 0) : 0;
      const observed = this.positionOf(session, term);
      return observed === undefined ? { value } : { value, observed };
    } catch (error) {
      this.replaceAfter(slot, client, error);
      throw error;
    } finally {
      if (onPrimary) this.primaryTerms.forget(session.id);
      this.sessionTrips.stop(session);
      // After an abort the operation may still be running: do not wait for it to end the session.
      if (signal?.aborted) void session.endSession().catch(() => undefined);
      else await session.endSession();
    }
  }

  /**
   * Runs `fn` on the primary in a causally consistent session; each operation commits on its own.
   * `transaction: true` (a multi-document transaction run by the adapter) is refused with
   * `TIDEMARK_MONGO_TRANSACTION_UNSUPPORTED` before anything runs; the default (undefined) and
   * `false` mean the same here. A callback that starts a transaction in the session must commit
   * it: one left open is aborted and the write fails with `TIDEMARK_MONGO_TRANSACTION_LEFT_OPEN`.
   */
  async write<T>(
    fn: (connection: MongoConnection) => Promise<T>,
    options: WriteOptions = {},
  ): Promise<CapturedWrite<T, MongoPosition>> {
    this.lifecycle.assertOpen();
    if (options.transaction === true) {
      throw new TidemarkError(
        MongoErrorCode.TransactionUnsupported,
        'The MongoDB adapter does not run writes in a multi-document transaction (transaction: true). Each operation commits on its own; to group several, call connection.session.startTransaction() and commitTransaction() inside the callback.',
      );
    }
    const client = this.primary.client;
    this.trips.write.operations++;
    const session = client.startSession({ causalConsistency: true });
    this.sessionTrips.start(session, this.trips.write);
    try {
      const value = await fn({ client, db: client.db(this.database), session });
      if (session.inTransaction()) {
        await session.abortTransaction().catch(() => undefined);
        throw new TransactionLeftOpenError(MongoErrorCode.TransactionLeftOpen);
      }
      // The write's own reply set operationTime on the session and named the term (seen by
      // command monitoring): no extra round trip.
      const term =
        this.writeTerms.take(session.id) ?? Math.max(this.knownTerm, this.writeTerms.newest);
      const position = this.positionOf(session, term);
      if (position === undefined) {
        throw new TidemarkError(
          MongoErrorCode.NoOperationTime,
          'The write callback ran no operation in its session, so there is no position to capture. Pass { session: connection.session } to every operation.',
        );
      }
      return { value, position };
    } catch (error) {
      this.replaceAfter(this.primary, client, error);
      throw error;
    } finally {
      this.sessionTrips.stop(session);
      await session.endSession();
    }
  }

  async probe(
    replicaId: string,
    context: ProbeContext<MongoPosition>,
  ): Promise<ProbeResult<MongoPosition>> {
    this.lifecycle.assertOpen();
    const slot = this.clients.replica(replicaId).monitor;
    const heartbeat = this.heartbeats.get(replicaId);
    let applied: MongoPosition;
    if (heartbeat && Date.now() - heartbeat.at <= this.heartbeatMaxAgeMs) {
      // An older applied position only makes routing more careful (invariant 2), never staler.
      this.probesFromHeartbeats++;
      applied = heartbeat.position;
    } else {
      this.probesOverNetwork++;
      applied = await this.using(slot, (client) => this.helloPosition(client));
    }
    const primary = context.primary;
    return primary === undefined
      ? { applied }
      : { applied, lagSeconds: Math.max(0, primary.time.t - applied.time.t) };
  }

  /**
   * The primary's newest write (`lastWrite.opTime`, whatever the read concern): the router asks
   * whether the primary has issued a position, and a write acknowledged with `w: 1` may be past
   * the majority point.
   */
  async probePrimary(): Promise<MongoPosition> {
    this.lifecycle.assertOpen();
    const reply = await this.using(this.primary, (client) =>
      client.db('admin').command({ hello: 1 }),
    );
    const position = positionFromOpTime((reply.lastWrite as HelloLastWrite | undefined)?.opTime);
    this.knownTerm = Math.max(this.knownTerm, position.term);
    return position;
  }

  /**
   * Same term (or no term): time decides. A position from an earlier term: is its entry still
   * in the primary's oplog with that term? One `local.oplog.rs` lookup per distinct position,
   * remembered; the adapter's user needs read access to `local` for it.
   */
  readonly classifyAgainstPrimary = (
    primary: MongoPosition,
    required: MongoPosition,
  ): Promise<PrimaryVerdict> => this.history.classify(primary, required);

  /**
   * Server-side wait: a find with afterClusterTime and maxTimeMS on the member itself. An arrow
   * function, so the router may call it detached from the adapter.
   */
  readonly waitFor = async (
    replicaId: string,
    position: MongoPosition,
    timeoutMs: number,
    context?: { signal: AbortSignal },
  ): Promise<WaitOutcome<MongoPosition>> => {
    this.lifecycle.assertOpen();
    const slot = this.clients.replica(replicaId).read;
    const client = slot.client;
    if (waitCannotStart(timeoutMs, context?.signal)) return { outcome: 'timeout' };
    const session = client.startSession({ causalConsistency: false });
    // A token from another process names a time this client has not seen; a real server
    // rejects afterClusterTime beyond the gossiped cluster time, so gossip the signed one.
    if (position.clusterTime) session.advanceClusterTime(toClusterTime(position.clusterTime));
    const command = client.db(this.database).command(
      {
        find: this.waitCollection,
        filter: {},
        limit: 1,
        readConcern: {
          level: this.readConcernLevel,
          afterClusterTime: toTimestamp(position.time),
        },
        maxTimeMS: Math.max(1, Math.ceil(timeoutMs)),
      },
      { session },
    );
    // The session ends once the command settles, even when the wait gave up on it earlier.
    void command.then(
      () => session.endSession(),
      () => session.endSession(),
    );
    try {
      // maxTimeMS bounds the wait on the server; this bounds it on the client too, where a
      // member that went down would hold the command in server selection for seconds.
      const reply = await settleWithin(command, timeoutMs + WAIT_GRACE_MS, context?.signal);
      if (reply === GAVE_UP) return { outcome: 'timeout' };
      const operationTime = reply.operationTime as BSON.Timestamp | undefined;
      return operationTime
        ? { outcome: 'reached', applied: { time: fromTimestamp(operationTime), term: 0 } }
        : { outcome: 'reached' };
    } catch (error) {
      if (error instanceof MongoServerError && error.code === MAX_TIME_EXPIRED) {
        return { outcome: 'timeout' };
      }
      this.replaceAfter(slot, client, error);
      throw error;
    }
  };

  isRetryable(error: unknown): boolean {
    if (
      error instanceof MongoNetworkError ||
      error instanceof MongoServerSelectionError ||
      // A client closed for good after a failed first connection: it has been replaced.
      error instanceof MongoTopologyClosedError
    ) {
      return !this.lifecycle.closed;
    }
    return error instanceof MongoServerError && RETRYABLE_CODES.has(Number(error.code));
  }

  close(): Promise<void> {
    return this.lifecycle.close(() => this.clients.end((slot) => slot.close()));
  }

  /** Run `work` on the slot's client, replacing the client when the driver closed it for good. */
  private async using<T>(slot: ClientSlot, work: (client: MongoClient) => Promise<T>): Promise<T> {
    const client = slot.client;
    try {
      return await work(client);
    } catch (error) {
      this.replaceAfter(slot, client, error);
      throw error;
    }
  }

  private replaceAfter(slot: ClientSlot, client: MongoClient, error: unknown): void {
    // After close the clients are closed on purpose: nothing to replace.
    if (!this.lifecycle.closed) slot.replaceAfter(client, error);
  }

  private listenToHeartbeats(client: MongoClient, hostToId: ReadonlyMap<string, string>): void {
    client.on('serverHeartbeatSucceeded', (event) => {
      const id = hostToId.get(event.connectionId.toLowerCase());
      if (id === undefined) return;
      try {
        this.heartbeats.set(id, { position: this.positionFromHello(event.reply), at: Date.now() });
      } catch {
        this.heartbeats.delete(id);
      }
    });
    client.on('serverHeartbeatFailed', (event) => {
      const id = hostToId.get(event.connectionId.toLowerCase());
      // A member that stopped answering must be probed for real, so it turns unreachable.
      if (id !== undefined) this.heartbeats.delete(id);
    });
  }

  private async helloPosition(client: MongoClient): Promise<MongoPosition> {
    return this.positionFromHello(await client.db('admin').command({ hello: 1 }));
  }

  private positionFromHello(reply: Record<string, unknown>): MongoPosition {
    const lastWrite = reply.lastWrite as HelloLastWrite | undefined;
    return positionFromOpTime(
      this.readConcernLevel === 'majority' ? lastWrite?.majorityOpTime : lastWrite?.opTime,
    );
  }

  private async oplogEntryAt(time: MongoTime): Promise<{ term: number } | 'absent' | 'truncated'> {
    const oplog = this.primary.client.db('local').collection('oplog.rs');
    const entry = await oplog.findOne({ ts: toTimestamp(time) }, { projection: { t: 1 } });
    if (entry) return { term: Number(entry['t'] ?? 0) };
    const oldest = await oplog.findOne({}, { sort: { $natural: 1 }, projection: { ts: 1 } });
    const oldestTs = oldest?.['ts'] as BSON.Timestamp | undefined;
    return oldestTs && compareTimes(fromTimestamp(oldestTs), time) > 0 ? 'truncated' : 'absent';
  }

  private positionOf(session: ClientSession, term: number): MongoPosition | undefined {
    const operationTime = session.operationTime;
    if (!operationTime) return undefined;
    const clusterTime = session.clusterTime;
    const signature = clusterTime?.signature;
    const position: MongoPosition = { time: fromTimestamp(operationTime), term };
    if (!clusterTime || !signature) return position;
    return {
      ...position,
      clusterTime: {
        time: fromTimestamp(clusterTime.clusterTime),
        keyId: BigInt(signature.keyId.toString()).toString(),
        hash: Buffer.from(signature.hash.buffer).toString('base64url'),
      },
    };
  }
}

/**
 * One driver client, replaced when the driver has closed it for good. When a client's first
 * connection attempt fails (its member was down when first used), the driver closes the client's
 * topology and every later operation fails with MongoTopologyClosedError, even once the member
 * is back. The adapter replaces such a client, so the next operation connects afresh.
 */
class ClientSlot {
  private current: MongoClient;

  constructor(private readonly make: () => MongoClient) {
    this.current = make();
  }

  get client(): MongoClient {
    return this.current;
  }

  /** Replace `used` after `error` when it is the current client and was closed for good. */
  replaceAfter(used: MongoClient, error: unknown): void {
    if (!(error instanceof MongoTopologyClosedError) || used !== this.current) return;
    this.current = this.make();
    void used.close().catch(() => undefined);
  }

  close(): Promise<void> {
    return this.current.close();
  }
}

const GAVE_UP = Symbol('gave up');

/**
 * `work`, unless `ms` pass or `signal` aborts first: then {@link GAVE_UP}. The work itself runs
 * on (its errors are dropped), so callers must not need its side effects.
 */
function settleWithin<T>(
  work: Promise<T>,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<T | typeof GAVE_UP> {
  work.catch(() => undefined);
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', giveUp);
    };
    const giveUp = () => {
      done();
      resolve(GAVE_UP);
    };
    const timer = setTimeout(giveUp, ms);
    if (signal?.aborted) giveUp();
    else signal?.addEventListener('abort', giveUp, { once: true });
    work.then(
      (value) => {
        done();
        resolve(value);
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}

function positionFromOpTime(opTime: HelloLastWrite['opTime']): MongoPosition {
  if (!opTime?.ts) {
    throw unexpectedReply(
      'hello reply has no lastWrite optime: is this member part of a replica set?',
    );
  }
  return { time: fromTimestamp(opTime.ts), term: Number(opTime.t ?? 0) };
}

function fromTimestamp(ts: BSON.Timestamp): MongoTime {
  return { t: ts.t, i: ts.i };
}

function toTimestamp(time: MongoTime): BSON.Timestamp {
  return new BSON.Timestamp({ t: time.t, i: time.i });
}

function toClusterTime(signed: NonNullable<MongoPosition['clusterTime']>): ClusterTime {
  return {
    clusterTime: toTimestamp(signed.time),
    signature: {
      hash: new BSON.Binary(Buffer.from(signed.hash, 'base64url'), 0),
      keyId: BSON.Long.fromBigInt(BigInt(signed.keyId)),
    },
  };
}

/** A driver client; a URI the driver cannot parse is a configuration error, said at startup. */
function mongoClient(uri: string, options: MongoClientOptions): MongoClient {
  try {
    return new MongoClient(uri, options);
  } catch (error) {
    throw new ConfigError(
      `The MongoDB URI or client options are not usable: ${errorMessage(error)}`,
    );
  }
}

function validateOptions(options: MongoAdapterOptions): void {
  requireOptionsObject(
    options,
    'createMongoAdapter needs an options object with uri, database and replicas.',
  );
  validateNonEmptyString('uri', options.uri, true);
  validateNonEmptyString('database', options.database, true);
  validateReplicas(options.replicas, '`host:port` strings', (name, host) => {
    if (typeof host !== 'string' || !/^[^\s/]+:\d+$/.test(host)) {
      throw new ConfigError(`${name} must be a \`host:port\` string, got ${JSON.stringify(host)}.`);
    }
  });
  if (
    options.clientOptions !== undefined &&
    (options.clientOptions === null || typeof options.clientOptions !== 'object')
  ) {
    throw new ConfigError('clientOptions must be an object of MongoClient options.');
  }
  validateOneOf('readConcernLevel', options.readConcernLevel, ['majority', 'local']);
  validateNonEmptyString('waitCollection', options.waitCollection);
  validateNonNegative('heartbeatMaxAgeMs', options.heartbeatMaxAgeMs);
}

/**
 * The class behind {@link createMongoAdapter}, kept so that `new MongoAdapter(options)` goes on
 * working for now.
 *
 * @deprecated Use {@link createMongoAdapter}.
 */
export const MongoAdapter: new (options: MongoAdapterOptions) => MongoAdapter = MongoClusterAdapter;
