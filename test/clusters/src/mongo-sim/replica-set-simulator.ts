// A MongoDB replica-set SIMULATOR: one TCP server per member speaking the real wire protocol to
// the official driver. It proves what a client library sends and decides; it does not prove how
// a real mongod behaves: no automatic elections (a test promotes a member), rollback only as
// "forget the lost branch", no durability, equality-only queries with a one-field sort.

import { createServer, type Server, type Socket } from 'node:net';
import { type BsonTimestamp, compareTimestamps, type SimulatorBson } from './bson.js';
import { type MemberRole, matching, type OplogEntry, SimulatedMember } from './member.js';
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
  /** Member names, primary first. Default `primary`, `secondary1`, `secondary2`, ... */
  memberNames?: readonly string[];
}

/** One command as the simulator received it. */
export interface SimulatorCommandRecord {
  readonly member: string;
  readonly command: string;
  readonly at: number;
  /** `readConcern` of the command, when it had one (level, afterClusterTime). */
  readonly readConcern?: { level?: string; afterClusterTime?: BsonTimestamp };
  readonly maxTimeMS?: number;
  /** `database.collection` of a find or insert. */
  readonly ns?: string;
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
  private term: number;
  /** The current primary's log; every member holds a prefix of it (rollback keeps it so). */
  private readonly oplog: OplogEntry[] = [];
  private readonly ports = new Map<string, number>();
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
    // The set starts with one no-op, so every optime a member reports names a real entry.
    this.oplog.push({
      ts: this.last,
      term: this.term,
      op: 'n',
      ns: '',
      documents: [],
      wallMs: Date.now(),
    });
  }

  /** Start the members and the apply loop. Call {@link stop} when done. */
  static async start(options: MongoReplicaSetSimulatorOptions): Promise<MongoReplicaSetSimulator> {
    const simulator = new MongoReplicaSetSimulator(options);
    const secondaries = options.secondaries ?? 2;
    const names = options.memberNames ?? [
      'primary',
      ...Array.from({ length: secondaries }, (_, n) => `secondary${n + 1}`),
    ];
    const listening = await Promise.all(names.map(() => simulator.listen(0)));
    names.forEach((name, index) => {
      const { server, port } = listening[index]!;
      const role: MemberRole = index === 0 ? 'primary' : 'secondary';
      const member = new SimulatedMember(
        name,
        role,
        `127.0.0.1:${port}`,
        options.delayMs ?? 0,
        simulator.oplog[0]!,
      );
      simulator.members.push(member);
      simulator.ports.set(name, port);
      simulator.attach(member, server);
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
    return this.members.find((m) => m.role === 'primary')!;
  }

  /** Current election term. */
  get currentTerm(): number {
    return this.term;
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
    if (member.down) return;
    member.down = true;
    member.thaw();
    member.abortWaiters();
    for (const socket of this.sockets.get(name) ?? []) socket.destroy();
    await new Promise<void>((resolve) => this.servers.get(name)?.close(() => resolve()));
  }

  /**
   * Bring a member that went down back on its old port with the data it had. It catches up from
   * the primary's log; a former primary comes back as a secondary (its lost branch was already
   * forgotten when another member was promoted).
   */
  async restart(name: string): Promise<void> {
    const member = this.member(name);
    if (!member.down) return;
    const { server } = await this.listen(this.ports.get(name)!);
    this.attach(member, server);
    member.down = false;
  }

  /**
   * Make a running secondary the primary in a new term, as an election would. The old primary
   * goes down if it is still up. Entries the new primary never received are a lost branch:
   * every member forgets them (rollback), and the new primary writes a no-op in its new term.
   */
  async promote(name: string, options: { repoint?: readonly string[] } = {}): Promise<void> {
    const next = this.member(name);
    if (next.down) throw new Error(`simulator: cannot promote ${name}: it is down`);
    if (next.role === 'primary') return;
    const old = this.primary;
    await this.kill(old.name);
    old.role = 'secondary';
    next.role = 'primary';
    // Members not re-pointed keep the old history as their own log and follow nobody.
    const left = this.members.filter(
      (m) =>
        m !== next &&
        m !== old &&
        m.branch === undefined &&
        options.repoint !== undefined &&
        !options.repoint.includes(m.name),
    );
    for (const member of left) member.branch = this.oplog.slice(0, member.receivedCount);
    // The new primary's history: what it received (it applies that first, as a real member
    // drains its buffer before accepting writes).
    next.branch = undefined;
    this.oplog.length = next.receivedCount;
    while (next.appliedCount < this.oplog.length) next.apply(this.oplog[next.appliedCount]!);
    for (const member of this.members) {
      if (member.branch === undefined) member.truncateTo(this.oplog, this.oplog.length);
    }
    this.term += 1;
    this.append({ op: 'n', ns: '', documents: [] });
  }

  /** Stop receiving from the primary; reads keep being answered. */
  cutOff(name: string): void {
    this.member(name).cutOff = true;
  }

  /** Receive from the current primary again (a member on an old history must rejoin instead). */
  reconnect(name: string): void {
    const member = this.member(name);
    if (member.branch !== undefined) {
      throw new Error(
        `simulator: ${name} is on an old history; rejoin it (it rolls back to the common point)`,
      );
    }
    member.cutOff = false;
  }

  /** Hold every reply of the member (and its replication) until thaw; connections still open. */
  freeze(name: string): void {
    const member = this.member(name);
    if (member.down) throw new Error(`simulator: cannot freeze ${name}: it is down`);
    member.freeze();
  }

  thaw(name: string): void {
    this.member(name).thaw();
  }

  /**
   * Make a member a secondary of the current primary again: restart it if it is down, and if it
   * is on an old history, roll it back to the last entry that history shares with the primary's
   * (as a real member's rollback does), then let it catch up. Resolves once it has.
   */
  async rejoin(name: string): Promise<void> {
    const member = this.member(name);
    if (member.role === 'primary') throw new Error(`simulator: ${name} is the primary`);
    member.thaw();
    member.cutOff = false;
    if (member.branch !== undefined) {
      const branch = member.branch;
      member.branch = undefined;
      member.truncateTo(branch, this.commonPrefix(branch));
    }
    await this.restart(name);
    const deadline = Date.now() + 10_000;
    while (member.appliedCount < this.oplog.length) {
      if (Date.now() > deadline) throw new Error(`simulator: ${name} did not catch up in 10 s`);
      await new Promise((resolve) => setTimeout(resolve, APPLY_TICK_MS));
    }
  }

  async stop(): Promise<void> {
    if (this.applyTimer) clearInterval(this.applyTimer);
    await Promise.all(this.members.filter((m) => !m.down).map((m) => this.kill(m.name)));
  }

  /** The primary's newest optime timestamp. */
  lastWriteTimestamp(): BsonTimestamp {
    return this.primary.lastApplied;
  }

  private attach(member: SimulatedMember, server: Server): void {
    this.servers.set(member.name, server);
    this.sockets.set(member.name, new Set());
    server.on('connection', (socket) => this.serve(member, socket));
  }

  private listen(port: number): Promise<{ server: Server; port: number }> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
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
    // A frozen member reads requests off the socket (the kernel would buffer them) and answers
    // none until it is thawed.
    await member.untilThawed();
    const reply = await this.execute(member, request.command, connectionId);
    await member.untilThawed();
    if (request.noReply || member.down || socket.destroyed) return;
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
      ...(name === 'find' || name === 'insert'
        ? { ns: `${String(command.$db)}.${String(command[name])}` }
        : {}),
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
    const primary = this.primary;
    return {
      helloOk: true,
      ismaster: writable,
      isWritablePrimary: writable,
      secondary: !writable,
      setName: this.setName,
      setVersion: 1,
      ...(writable ? { electionId: this.electionId() } : {}),
      hosts: this.members.map((m) => m.host),
      // A member that is down is nobody's primary; the simulator holds no election on its own.
      ...(primary.down ? {} : { primary: primary.host }),
      me: member.host,
      lastWrite: {
        opTime: { ts: member.lastApplied, t: this.long(member.lastAppliedTerm) },
        lastWriteDate: new Date(member.lastAppliedWallMs),
        majorityOpTime: { ts: majority.ts, t: this.long(majority.term) },
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
    const { ts } = this.append({ op: 'i', ns, documents });
    // A replica-set member's write reply names the write's optime and the primary's election.
    const reply: CommandReply = {
      n: documents.length,
      opTime: { ts, t: this.long(this.term) },
      electionId: this.electionId(),
      operationTime: ts,
    };
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
    if (member.down) throw new SimulatorCommandError(91, 'ShutdownInProgress', 'shutting down');
    const ns = `${String(command.$db)}.${String(command.find)}`;
    const filter = (command.filter as Record<string, unknown> | undefined) ?? {};
    let documents =
      ns === 'local.oplog.rs' ? matching(this.oplogView(member), filter) : member.find(ns, filter);
    documents = sortedBy(documents, command.sort);
    const limit =
      typeof command.limit === 'number' && command.limit > 0 ? command.limit : undefined;
    if (limit !== undefined) documents = documents.slice(0, limit);
    return {
      cursor: { id: this.long(0), ns, firstBatch: documents },
      // The point the read is at: a majority read sees the majority-committed snapshot. (The
      // simulator returns every applied document either way; only the reported time differs.)
      operationTime: majority ? this.memberMajorityTimestamp(member).ts : member.lastApplied,
    };
  }

  /** The member's applied oplog entries as `local.oplog.rs` documents. */
  private oplogView(member: SimulatedMember): Record<string, unknown>[] {
    return (member.branch ?? this.oplog).slice(0, member.appliedCount).map((entry) => ({
      ts: entry.ts,
      t: this.long(entry.term),
      op: entry.op,
      ns: entry.ns,
      wall: new Date(entry.wallMs),
    }));
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

  /** Write one entry on the primary: the next timestamp, the current term. */
  private append(entry: Pick<OplogEntry, 'op' | 'ns' | 'documents'>): OplogEntry {
    const written: OplogEntry = {
      ...entry,
      ts: this.nextTimestamp(),
      term: this.term,
      wallMs: Date.now(),
    };
    this.oplog.push(written);
    const primary = this.primary;
    primary.receivedCount = this.oplog.length;
    primary.apply(written);
    return written;
  }

  /** Election id as mongod reports it: `7fffffff` then the term in 16 hex digits. */
  private electionId(): unknown {
    return new this.bson.ObjectId(`7fffffff${this.term.toString(16).padStart(16, '0')}`);
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

  /**
   * The majority commit point: the newest entry a majority of all members hold in their oplog.
   * Holding counts, not applying (the simulator's model: a member whose replay is paused still
   * receives and acknowledges), so majority writes keep working while replay is paused.
   */
  /** How many first entries of `log` (a member's old history) the primary's log shares. */
  private commonPrefix(log: readonly OplogEntry[]): number {
    let common = 0;
    while (
      common < log.length &&
      common < this.oplog.length &&
      compareTimestamps(log[common]!.ts, this.oplog[common]!.ts) === 0 &&
      log[common]!.term === this.oplog[common]!.term
    ) {
      common++;
    }
    return common;
  }

  private majorityEntry(): OplogEntry {
    // A member on an old history holds only the part it shares with the current one.
    const held = this.members
      .map((m) =>
        m.branch === undefined
          ? m.receivedCount
          : Math.min(m.receivedCount, this.commonPrefix(m.branch)),
      )
      .sort((a, b) => b - a);
    const count = held[Math.floor(this.members.length / 2)] ?? 1;
    return this.oplog[Math.max(0, Math.min(count, this.oplog.length) - 1)]!;
  }

  private majorityTimestamp(): BsonTimestamp {
    return this.majorityEntry().ts;
  }

  /** A member's majority-committed point: never past what the member itself has applied. */
  private memberMajorityTimestamp(member: SimulatedMember): { ts: BsonTimestamp; term: number } {
    const majority = this.majorityEntry();
    return compareTimestamps(majority.ts, member.lastApplied) <= 0
      ? { ts: majority.ts, term: majority.term }
      : { ts: member.lastApplied, term: member.lastAppliedTerm };
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
      if (member.role === 'primary' || member.down) continue;
      if (member.cutOff || member.branch !== undefined || member.isFrozen) continue;
      member.receivedCount = this.oplog.length;
      if (member.paused) continue;
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

/** The simulator's sort: one top-level field, ascending (1) or descending (-1), numbers only. */
function sortedBy(documents: Record<string, unknown>[], sort: unknown): Record<string, unknown>[] {
  if (sort === null || typeof sort !== 'object') return documents;
  const [field, direction] = Object.entries(sort as Record<string, unknown>)[0] ?? [];
  if (field === undefined) return documents;
  const sign = Number(direction) < 0 ? -1 : 1;
  return [...documents].sort((a, b) => sign * (Number(a[field]) - Number(b[field])));
}
