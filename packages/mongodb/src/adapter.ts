import {
  type Adapter,
  type CapturedWrite,
  type PositionCodec,
  PRIMARY,
  type PrimaryVerdict,
  type ProbeContext,
  type ProbeResult,
  type ReadContext,
  type ReadOutcome,
  TidemarkError,
  type WaitOutcome,
} from '@tidemark/core';
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
} from 'mongodb';
import { MajorityWriteConcernRequiredError, MongoErrorCode } from './errors.js';
import { HistoryBook, historyAwareCodec } from './history.js';
import { directMemberUri } from './member-uri.js';
import { compareTimes, type MongoPosition, type MongoTime } from './position.js';
import { readOnlyClient } from './read-only.js';
import { WriteTerms } from './write-terms.js';

/** What read and write callbacks receive. Pass `{ session }` to every operation. */
export interface MongoConnection {
  readonly client: MongoClient;
  readonly db: Db;
  /** Causally consistent session whose operationTime becomes the position. */
  readonly session: ClientSession;
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
export class MongoAdapter implements Adapter<MongoPosition, MongoConnection> {
  /**
   * {@link mongoPositionCodec} plus history: after an election, a position from an earlier term
   * counts as covered only once the primary's oplog showed it survived.
   */
  readonly codec: PositionCodec<MongoPosition>;
  readonly replicas: readonly string[];
  private readonly primaryClient: MongoClient;
  private readonly memberClients = new Map<string, MongoClient>();
  private readonly database: string;
  private readonly readConcernLevel: 'majority' | 'local';
  private readonly waitCollection: string;
  /** Newest term seen in a primary probe, for writes whose reply named none. */
  private knownTerm = 0;
  private readonly writeTerms: WriteTerms;
  private readonly history: HistoryBook;
  private readonly heartbeatMaxAgeMs: number;
  /** Latest heartbeat position per replica id, with the time it arrived. */
  private readonly heartbeats = new Map<string, { position: MongoPosition; at: number }>();
  private probesFromHeartbeats = 0;
  private probesOverNetwork = 0;

  constructor(options: MongoAdapterOptions) {
    this.database = options.database;
    this.readConcernLevel = options.readConcernLevel ?? 'majority';
    this.waitCollection = options.waitCollection ?? 'tidemark_wait';
    this.primaryClient = new MongoClient(options.uri, {
      ...options.clientOptions,
      monitorCommands: true,
    });
    this.writeTerms = new WriteTerms(this.primaryClient);
    this.history = new HistoryBook((time) => this.oplogEntryAt(time));
    this.codec = historyAwareCodec(this.history);
    const w = this.primaryClient.options.writeConcern?.w;
    if (w !== 'majority' && options.allowNonMajorityWrites !== true) {
      throw new MajorityWriteConcernRequiredError(w);
    }
    this.heartbeatMaxAgeMs = options.heartbeatMaxAgeMs ?? 1000;
    this.replicas = Object.keys(options.replicas);
    const hostToId = new Map(
      Object.entries(options.replicas).map(([id, host]) => [host.toLowerCase(), id]),
    );
    for (const [id, host] of Object.entries(options.replicas)) {
      const { replicaSet: _ignored, ...memberOptions } = options.clientOptions ?? {};
      this.memberClients.set(
        id,
        new MongoClient(directMemberUri(options.uri, host), {
          ...memberOptions,
          directConnection: true,
          readConcern: { level: this.readConcernLevel },
        }),
      );
    }
    if (this.heartbeatMaxAgeMs > 0) {
      for (const client of [this.primaryClient, ...this.memberClients.values()]) {
        this.listenToHeartbeats(client, hostToId);
      }
    }
  }

  /** How probes were answered so far (heartbeat cache versus own round trips). */
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
    const client = this.client(target);
    const session = client.startSession({ causalConsistency: true });
    try {
      const required = context.required;
      if (required) {
        if (required.clusterTime) session.advanceClusterTime(toClusterTime(required.clusterTime));
        session.advanceOperationTime(toTimestamp(required.time));
      }
      const readOnly = readOnlyClient(client);
      const value = await fn({ client: readOnly, db: readOnly.db(this.database), session });
      const observed = this.positionOf(session, 0);
      return observed === undefined ? { value } : { value, observed };
    } finally {
      await session.endSession();
    }
  }

  async write<T>(
    fn: (connection: MongoConnection) => Promise<T>,
  ): Promise<CapturedWrite<T, MongoPosition>> {
    const client = this.primaryClient;
    const session = client.startSession({ causalConsistency: true });
    try {
      const value = await fn({ client, db: client.db(this.database), session });
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
    } finally {
      await session.endSession();
    }
  }

  async probe(
    replicaId: string,
    context: ProbeContext<MongoPosition>,
  ): Promise<ProbeResult<MongoPosition>> {
    const heartbeat = this.heartbeats.get(replicaId);
    let applied: MongoPosition;
    if (heartbeat && Date.now() - heartbeat.at <= this.heartbeatMaxAgeMs) {
      // An older applied position only makes routing more careful (invariant 2), never staler.
      this.probesFromHeartbeats++;
      applied = heartbeat.position;
    } else {
      this.probesOverNetwork++;
      applied = await this.helloPosition(this.client(replicaId));
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
    const reply = await this.primaryClient.db('admin').command({ hello: 1 });
    const position = positionFromOpTime((reply.lastWrite as HelloLastWrite | undefined)?.opTime);
    this.knownTerm = Math.max(this.knownTerm, position.term);
    return position;
  }

  /**
   * Same term (or no term): time decides. A position from an earlier term: is its entry still
   * in the primary's oplog with that term? One `local.oplog.rs` lookup per distinct position,
   * remembered; the adapter's user needs read access to `local` for it.
   */
  classifyAgainstPrimary(primary: MongoPosition, required: MongoPosition): Promise<PrimaryVerdict> {
    return this.history.classify(primary, required);
  }

  /** Server-side wait: a find with afterClusterTime and maxTimeMS on the member itself. */
  async waitFor(
    replicaId: string,
    position: MongoPosition,
    timeoutMs: number,
    context?: { signal: AbortSignal },
  ): Promise<WaitOutcome<MongoPosition>> {
    const client = this.client(replicaId);
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
      throw error;
    }
  }

  isRetryable(error: unknown): boolean {
    if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError)
      return true;
    return error instanceof MongoServerError && RETRYABLE_CODES.has(Number(error.code));
  }

  async close(): Promise<void> {
    await Promise.all([
      this.primaryClient.close(),
      ...[...this.memberClients.values()].map((client) => client.close()),
    ]);
  }

  private client(target: string): MongoClient {
    if (target === PRIMARY) return this.primaryClient;
    const client = this.memberClients.get(target);
    if (!client) throw new Error(`@tidemark/mongodb: unknown replica id ${JSON.stringify(target)}`);
    return client;
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
    const oplog = this.primaryClient.db('local').collection('oplog.rs');
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
    throw new Error('hello reply has no lastWrite optime: is this member part of a replica set?');
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
