// A MongoDB replica-set SIMULATOR: one TCP server per member speaking the real wire protocol to
// the official driver. It proves what a client library sends and decides; it does not prove how
// a real mongod behaves (no elections, no rollback, no durability, equality-only queries).

import { createServer, type Server, type Socket } from 'node:net';
import { type BsonTimestamp, compareTimestamps, type SimulatorBson } from './bson.js';
import { type MemberRole, type OplogEntry, SimulatedMember } from './member.js';
import { decodeRequest, encodeReply, MessageFramer, type WireRequest } from './wire.js';

export interface MongoReplicaSetSimulatorOptions {
  /** The driver's `BSON` export: `import { BSON } from 'mongodb'`. */
  bson: SimulatorBson;
  /** Replica set name. Default `tidemark-sim`. */
  setName?: string;
  /** Number of secondaries. Default 2. */
  secondaries?: number;
  /** Initial replication delay of every secondary, in ms. Default 0. */
  delayMs?: number;
  /** Election term reported in optimes. Default 1. */
  term?: number;
}

/** One command as the simulator received it. */
export interface SimulatorCommandRecord {
  readonly member: string;
  readonly command: string;
  readonly at: number;
  /** `readConcern` of the command, when it had one (level, afterClusterTime). */
  readonly readConcern?: { level?: string; afterClusterTime?: BsonTimestamp };
  readonly maxTimeMS?: number;
}

/** What a command handler returns: a reply body, without the cluster-time fields. */
type CommandReply = Record<string, unknown>;

const APPLY_TICK_MS = 2;
const MAX_WIRE_VERSION = 17;

/** Command error with a server error code, sent back as `{ ok: 0, code, codeName, errmsg }`. */
class SimulatorCommandError extends Error {
  constructor(
    readonly code: number,
    readonly codeName: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Primary plus secondaries on free 127.0.0.1 ports. Secondaries apply the primary's log after a
 * changeable delay and can be paused, resumed and killed. Name it a simulator wherever it is used.
 */
export class MongoReplicaSetSimulator {
  readonly setName: string;
  readonly members: SimulatedMember[] = [];
  /** Commands received, in order, for tests that count round trips and check what was sent. */
  readonly commandLog: SimulatorCommandRecord[] = [];
  private readonly bson: SimulatorBson;
  private readonly term: number;
  private readonly oplog: OplogEntry[] = [];
  private readonly servers = new Map<string, Server>();
  private readonly sockets = new Map<string, Set<Socket>>();
  private applyTimer: NodeJS.Timeout | undefined;
  private majorityWaiters: Array<{ ts: BsonTimestamp; resolve: () => void }> = [];
  private last: BsonTimestamp;
  private connectionIds = 0;

  private constructor(options: MongoReplicaSetSimulatorOptions) {
    this.bson = options.bson;
    this.setName = options.setName ?? 'tidemark-sim';
    this.term = options.term ?? 1;
    this.last = new this.bson.Timestamp({ t: Math.floor(Date.now() / 1000), i: 1 });
  }

  /** Start the members and the apply loop. Call {@link stop} when done. */
  static async start(options: MongoReplicaSetSimulatorOptions): Promise<MongoReplicaSetSimulator> {
    const simulator = new MongoReplicaSetSimulator(options);
    const secondaries = options.secondaries ?? 2;
    const roles: Array<[string, MemberRole]> = [['primary', 'primary']];
    for (let n = 1; n <= secondaries; n++) roles.push([`secondary${n}`, 'secondary']);
    const listening = await Promise.all(roles.map(() => simulator.listen()));
    roles.forEach(([name, role], index) => {
      const { server, port } = listening[index]!;
      const member = new SimulatedMember(
        name,
        role,
        `127.0.0.1:${port}`,
        simulator.last,
        options.delayMs ?? 0,
      );
      simulator.members.push(member);
      simulator.servers.set(name, server);
      simulator.sockets.set(name, new Set());
      server.on('connection', (socket) => simulator.serve(member, socket));
    });
    simulator.applyTimer = setInterval(() => simulator.applyTick(), APPLY_TICK_MS);
    simulator.applyTimer.unref();
    return simulator;
  }

  /** `mongodb://` URI naming every member, with `replicaSet=`. */
  get uri(): string {
    return `mongodb://${this.members.map((m) => m.host).join(',')}/?replicaSet=${this.setName}`;
  }

  get primary(): SimulatedMember {
    return this.members[0]!;
  }

  member(name: string): SimulatedMember {
    const found = this.members.find((m) => m.name === name);
    if (!found) throw new Error(`simulator: no member named ${name}`);
    return found;
  }

  /** Stop applying the primary's log on a secondary; reads there keep answering. */
  pause(name: string): void {
    this.member(name).paused = true;
  }

  resume(name: string): void {
    this.member(name).paused = false;
  }

  setDelay(name: string, delayMs: number): void {
    this.member(name).delayMs = delayMs;
  }

  /** Close the member's port and drop its connections, like a crashed process. */
  async kill(name: string): Promise<void> {
    const member = this.member(name);
    member.killed = true;
    member.abortWaiters();
    for (const socket of this.sockets.get(name) ?? []) socket.destroy();
    await new Promise<void>((resolve) => this.servers.get(name)?.close(() => resolve()));
  }

  async stop(): Promise<void> {
    if (this.applyTimer) clearInterval(this.applyTimer);
    await Promise.all(this.members.filter((m) => !m.killed).map((m) => this.kill(m.name)));
  }

  /** The primary's newest optime timestamp. */
  lastWriteTimestamp(): BsonTimestamp {
    return this.primary.lastApplied;
  }

  private listen(): Promise<{ server: Server; port: number }> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        if (address === null || typeof address === 'string') {
          reject(new Error('simulator: no TCP address'));
          return;
        }
        resolve({ server, port: address.port });
      });
    });
  }

  private serve(member: SimulatedMember, socket: Socket): void {
    const open = this.sockets.get(member.name)!;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => socket.destroy());
    const connectionId = ++this.connectionIds;
    const framer = new MessageFramer();
    socket.on('data', (chunk: Buffer) => {
      for (const message of framer.push(chunk)) {
        void this.respond(member, socket, message, connectionId);
      }
    });
  }

  private async respond(
    member: SimulatedMember,
    socket: Socket,
    message: Buffer,
    connectionId: number,
  ): Promise<void> {
    let request: WireRequest;
    try {
      request = decodeRequest(this.bson, message);
    } catch {
      socket.destroy();
      return;
    }
    const reply = await this.execute(member, request.command, connectionId);
    if (request.noReply || member.killed || socket.destroyed) return;
    socket.write(encodeReply(this.bson, request, reply));
  }

  private async execute(
    member: SimulatedMember,
    command: Record<string, unknown>,
    connectionId: number,
  ): Promise<CommandReply> {
    const name = Object.keys(command)[0] ?? '';
    const record: SimulatorCommandRecord = { member: member.name, command: name, at: Date.now() };
    const readConcern = command.readConcern as SimulatorCommandRecord['readConcern'];
    this.commandLog.push({
      ...record,
      ...(readConcern ? { readConcern } : {}),
      ...(typeof command.maxTimeMS === 'number' ? { maxTimeMS: command.maxTimeMS } : {}),
    });
    try {
      const body = await this.dispatch(member, name, command, connectionId);
      return { ...body, ok: 1, ...this.gossip(member, body) };
    } catch (error) {
      const failure =
        error instanceof SimulatorCommandError
          ? error
          : new SimulatorCommandError(1, 'InternalError', String(error));
      return {
        ok: 0,
        errmsg: failure.message,
        code: failure.code,
        codeName: failure.codeName,
        ...this.gossip(member, {}),
      };
    }
  }

  /** `$clusterTime` and `operationTime`, as every reply from a replica-set member carries. */
  private gossip(member: SimulatedMember, body: CommandReply): CommandReply {
    const operationTime = (body.operationTime as BsonTimestamp | undefined) ?? member.lastApplied;
    return {
      operationTime,
      $clusterTime: {
        clusterTime: this.last,
        signature: { hash: new this.bson.Binary(new Uint8Array(20), 0), keyId: this.long(0) },
      },
    };
  }

  private async dispatch(
    member: SimulatedMember,
    name: string,
    command: Record<string, unknown>,
    connectionId: number,
  ): Promise<CommandReply> {
    switch (name) {
      case 'hello':
      case 'isMaster':
      case 'ismaster':
        return this.hello(member, connectionId);
      case 'ping':
      case 'endSessions':
      case 'killCursors':
        return {};
      case 'buildInfo':
      case 'buildinfo':
        return {
          version: '7.0.0-simulator',
          versionArray: [7, 0, 0, 0],
          maxBsonObjectSize: 16_777_216,
        };
      case 'insert':
        return this.insert(member, command);
      case 'find':
        return this.find(member, command);
      default:
        throw new SimulatorCommandError(
          59,
          'CommandNotFound',
          `no such command: '${name}' (the simulator implements only what the tests need)`,
        );
    }
  }

  private hello(member: SimulatedMember, connectionId: number): CommandReply {
    const writable = member.role === 'primary';
    const majority = this.memberMajorityTimestamp(member);
    return {
      helloOk: true,
      ismaster: writable,
      isWritablePrimary: writable,
      secondary: !writable,
      setName: this.setName,
      setVersion: 1,
      hosts: this.members.map((m) => m.host),
      primary: this.primary.host,
      me: member.host,
      lastWrite: {
        opTime: { ts: member.lastApplied, t: this.long(this.term) },
        lastWriteDate: new Date(member.lastAppliedWallMs),
        majorityOpTime: { ts: majority, t: this.long(this.term) },
        majorityWriteDate: new Date(member.lastAppliedWallMs),
      },
      maxBsonObjectSize: 16_777_216,
      maxMessageSizeBytes: 48_000_000,
      maxWriteBatchSize: 100_000,
      localTime: new Date(),
      logicalSessionTimeoutMinutes: 30,
      connectionId,
      minWireVersion: 0,
      maxWireVersion: MAX_WIRE_VERSION,
      readOnly: false,
    };
  }

  private async insert(
    member: SimulatedMember,
    command: Record<string, unknown>,
  ): Promise<CommandReply> {
    if (member.role !== 'primary') {
      throw new SimulatorCommandError(10107, 'NotWritablePrimary', 'not primary');
    }
    const documents = (command.documents as Record<string, unknown>[] | undefined) ?? [];
    const ns = `${String(command.$db)}.${String(command.insert)}`;
    const ts = this.nextTimestamp();
    const entry: OplogEntry = { ts, ns, documents, wallMs: Date.now() };
    this.oplog.push(entry);
    member.apply(entry);
    const reply: CommandReply = { n: documents.length, operationTime: ts };
    const writeConcern = command.writeConcern as { w?: unknown; wtimeout?: unknown } | undefined;
    if (writeConcern?.w === 'majority') {
      const timeout = typeof writeConcern.wtimeout === 'number' ? writeConcern.wtimeout : undefined;
      if (!(await this.waitForMajority(ts, timeout))) {
        reply.writeConcernError = {
          code: 64,
          codeName: 'WriteConcernFailed',
          errmsg: 'waiting for replication timed out (simulator)',
        };
      }
    }
    return reply;
  }

  private async find(
    member: SimulatedMember,
    command: Record<string, unknown>,
  ): Promise<CommandReply> {
    const readConcern = command.readConcern as
      | { level?: string; afterClusterTime?: BsonTimestamp }
      | undefined;
    const majority = readConcern?.level === 'majority';
    const maxTimeMS = typeof command.maxTimeMS === 'number' ? command.maxTimeMS : undefined;
    const after = readConcern?.afterClusterTime;
    if (after && !(await this.waitUntilReadable(member, after, majority, maxTimeMS))) {
      throw new SimulatorCommandError(
        50,
        'MaxTimeMSExpired',
        'operation exceeded time limit waiting for afterClusterTime (simulator)',
      );
    }
    if (member.killed) throw new SimulatorCommandError(91, 'ShutdownInProgress', 'shutting down');
    const ns = `${String(command.$db)}.${String(command.find)}`;
    const filter = (command.filter as Record<string, unknown> | undefined) ?? {};
    let documents = member.find(ns, filter);
    const limit =
      typeof command.limit === 'number' && command.limit > 0 ? command.limit : undefined;
    if (limit !== undefined) documents = documents.slice(0, limit);
    return {
      cursor: { id: this.long(0), ns, firstBatch: documents },
      // The point the read is at: a majority read sees the majority-committed snapshot. (The
      // simulator returns every applied document either way; only the reported time differs.)
      operationTime: majority ? this.memberMajorityTimestamp(member) : member.lastApplied,
    };
  }

  /** afterClusterTime: the member applied `after` (and, for majority, a majority did too). */
  private async waitUntilReadable(
    member: SimulatedMember,
    after: BsonTimestamp,
    majority: boolean,
    maxTimeMS: number | undefined,
  ): Promise<boolean> {
    const deadline = maxTimeMS === undefined ? undefined : Date.now() + maxTimeMS;
    if (!(await member.waitForApplied(after, maxTimeMS))) return false;
    if (!majority) return true;
    const remaining = deadline === undefined ? undefined : Math.max(1, deadline - Date.now());
    return this.waitForMajority(after, remaining);
  }

  private nextTimestamp(): BsonTimestamp {
    const seconds = Math.floor(Date.now() / 1000);
    const next =
      seconds > this.last.t
        ? new this.bson.Timestamp({ t: seconds, i: 1 })
        : new this.bson.Timestamp({ t: this.last.t, i: this.last.i + 1 });
    this.last = next;
    return next;
  }

  /** Newest timestamp applied by a majority of the (live) members. */
  private majorityTimestamp(): BsonTimestamp {
    const applied = this.members
      .filter((m) => !m.killed)
      .map((m) => m.lastApplied)
      .sort((a, b) => compareTimestamps(b, a));
    const needed = Math.floor(this.members.length / 2);
    return applied[needed] ?? applied[applied.length - 1] ?? this.last;
  }

  /** A member's majority-committed point: never past what the member itself has applied. */
  private memberMajorityTimestamp(member: SimulatedMember): BsonTimestamp {
    const majority = this.majorityTimestamp();
    return compareTimestamps(majority, member.lastApplied) <= 0 ? majority : member.lastApplied;
  }

  private waitForMajority(ts: BsonTimestamp, timeoutMs: number | undefined): Promise<boolean> {
    if (compareTimestamps(this.majorityTimestamp(), ts) >= 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer =
        timeoutMs === undefined || timeoutMs === 0
          ? undefined
          : setTimeout(() => resolve(false), timeoutMs);
      this.majorityWaiters.push({
        ts,
        resolve: () => {
          if (timer) clearTimeout(timer);
          resolve(true);
        },
      });
    });
  }

  private applyTick(): void {
    const now = Date.now();
    for (const member of this.members) {
      if (member.role === 'primary' || member.paused || member.killed) continue;
      while (member.appliedCount < this.oplog.length) {
        const entry = this.oplog[member.appliedCount]!;
        if (entry.wallMs + member.delayMs > now) break;
        member.apply(entry);
      }
    }
    if (this.majorityWaiters.length > 0) {
      const majority = this.majorityTimestamp();
      const waiting = this.majorityWaiters;
      this.majorityWaiters = [];
      for (const waiter of waiting) {
        if (compareTimestamps(majority, waiter.ts) >= 0) waiter.resolve();
        else this.majorityWaiters.push(waiter);
      }
    }
  }

  private long(value: number): unknown {
    return this.bson.Long.fromNumber(value);
  }
}
