// A MySQL or MariaDB source plus GTID replicas: the Cluster contract on top of the flavour's
// replication SQL (dialect.ts). Where the servers run (child processes, containers) is the
// provider's part, given as one MysqlServer per node: src/providers/local/mysql.ts and
// src/providers/testcontainers-mysql.ts are thin entries that build the servers and hand them
// here. What the two providers do differently is a TopologyOptions field, named for the behaviour.

import { notSupported, ownClusterCapabilities } from '../capabilities.js';
import { NodeTable } from '../node-table.js';
import { DATABASE, URL_USER } from '../providers/local/mysql-config.js';
import type { Cluster, ClusterCapability, ClusterNode, PromoteOptions } from '../types.js';
import { dialectFor, type MysqlFlavour, type ReplicationDialect } from './dialect.js';
import * as sql from './sql.js';

const FOLLOW_TIMEOUT_MS = 30_000;
const CATCH_UP_TIMEOUT_MS = 60_000;
// How long a clean stop waits for replicas to receive what the stopping primary committed.
const HAND_OVER_MS = 5_000;
// A replica counts as following (follow: 'settled') only if it still does after this long: a
// source that refuses it (error 1236) does so right after the receiver reports 'Yes'.
const FOLLOW_SETTLE_MS = 150;

/** One node's server process, wherever it runs. */
export interface MysqlServer {
  /** The node as the tests see it; the topology keeps `role`, the server and topology `running`. */
  readonly node: ClusterNode;
  /** The harness's own account on this server (see ADMIN_USER in mysql-config.ts). */
  readonly adminUrl: string;
  /** Where the other servers reach this one to replicate from it. */
  readonly sourceAddress: { readonly host: string; readonly port: number };
  /** The server process is alive. */
  running(): boolean;
  /**
   * Start the server process (with the flavour's read-only options when `node.role` is
   * 'replica'), set `node.running`, and resolve once it accepts connections.
   */
  start(): Promise<void>;
  /**
   * Finish a clean stop: `asked` is true when the server accepted SQL SHUTDOWN, false when it did
   * not answer SQL (then a SIGTERM is the same clean shutdown). Resolves once the server is gone.
   */
  finishStop(asked: boolean): Promise<void>;
  /** SIGKILL the server (a crash; a frozen one too); resolves once it is gone. */
  kill(): Promise<void>;
  /** SIGSTOP the server; nothing if it is frozen already. */
  freeze(): Promise<void>;
  /** SIGCONT a frozen server; nothing if it is not frozen. */
  thaw(): Promise<void>;
  /**
   * Replace the data directory of the (killed) server by a fresh, empty one (a new server_uuid)
   * whose option file carries `serverId`. Does not start it.
   */
  reinitialise(serverId: number): Promise<void>;
  /** The end of the server's log, for error messages. */
  logTail(): Promise<string>;
}

/** Where the local and the container provider differ; each field says why. */
export interface TopologyOptions {
  /**
   * When attaching a replica counts as done.
   * - 'settled' (local): the receiver runs connected to the source's port, the applier runs (or
   *   was paused by the harness), it has received everything the source had, and all that still
   *   holds FOLLOW_SETTLE_MS later: a source that refuses the replica (error 1236) does so right
   *   after the receiver reports 'Yes'. Receiver and applier errors end the wait at once.
   * - 'received' (containers): the receiver reports 'Yes' and has received everything the source
   *   had; only a receiver error ends the wait early. Every container's source port is 3306
   *   behind a network alias, so the port says nothing there; this is what the container
   *   provider has always checked (CI runs the conformance suite on it).
   */
  readonly follow: 'settled' | 'received';
  /**
   * pauseReplay() reads the replica status back and throws if the applier still runs (local).
   * The container provider never checked, and its runs are green without the extra round trip.
   */
  readonly verifyPause: boolean;
  /**
   * The replicas of a new cluster are attached all at once (local: the start time of a test
   * file is mostly waiting) rather than one after the other (containers, as they always were:
   * every container already initialised at once, and the engine may be remote).
   */
  readonly attachInParallel: boolean;
}

/** Why a replica does not follow its source. */
type FollowOutcome = { ok: true } | { ok: false; why: string; withLog: boolean };

interface Member {
  readonly server: MysqlServer;
  readonly node: ClusterNode;
  readonly adminUrl: string;
  /** Distinct per node; a rejoined node gets a new one (replicas skip their own id's events). */
  serverId: number;
  /** Applier stopped by pauseReplay() and not resumed since. */
  paused: boolean;
  /** Has written its own binary log events as a primary since it last followed a source. */
  wrote: boolean;
  /** The node a replica was last pointed at (undefined for a primary). */
  upstream: string | undefined;
  /** Receiver stopped by cutOff() and not reconnected since. */
  cut: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class MysqlTopology implements Cluster {
  readonly capabilities: ReadonlySet<ClusterCapability>;
  protected readonly dialect: ReplicationDialect;
  protected readonly table: NodeTable<Member>;
  private serverVersion = '';
  private tornDown: Promise<void> | undefined;

  /**
   * `servers[0]` is the source (n0), the others its replicas; server ids are 1, 2, ... in that
   * order. `dispose` stops every server and removes what the provider made (teardown()).
   */
  constructor(
    readonly target: string,
    readonly flavour: MysqlFlavour,
    servers: readonly MysqlServer[],
    private readonly options: TopologyOptions,
    private readonly dispose: () => Promise<void>,
  ) {
    this.capabilities = ownClusterCapabilities(flavour);
    this.dialect = dialectFor(flavour);
    const members = servers.map((server, i) => ({
      server,
      node: server.node,
      adminUrl: server.adminUrl,
      serverId: i + 1,
      paused: false,
      wrote: i === 0,
      upstream: i === 0 ? undefined : servers[0]!.node.name,
      cut: false,
    }));
    this.table = new NodeTable(target, members);
  }

  get version(): string {
    return this.serverVersion;
  }

  /** Start every server at once (start-up is mostly waiting on InnoDB); then call replicate(). */
  async launchAll(): Promise<void> {
    await Promise.all(this.table.all().map((m) => this.launch(m)));
  }

  /**
   * Once every server accepts connections: the source creates the `test` database, each replica
   * is pointed at it with GTID auto-positioning (fetching the source's whole binary log), and
   * this resolves once every replica has applied it.
   */
  async replicate(): Promise<void> {
    const primary = this.table.primary();
    await sql.query(primary.adminUrl, `CREATE DATABASE IF NOT EXISTS ${DATABASE}`);
    const replicas = this.table.all().filter((m) => m !== primary);
    if (this.options.attachInParallel) await Promise.all(replicas.map((m) => this.attach(m)));
    else for (const m of replicas) await this.attach(m);
    // Resolve only once every replica has the `test` database its URL names.
    const written = await this.dialect.executed(primary.adminUrl);
    for (const m of replicas) {
      if (!(await this.dialect.waitApplied(m.adminUrl, written, CATCH_UP_TIMEOUT_MS))) {
        throw new Error(
          `${m.node.name} did not apply ${written} from ${primary.node.name} within ${CATCH_UP_TIMEOUT_MS} ms\n${await m.server.logTail()}`,
        );
      }
    }
    this.serverVersion = await sql.scalar(primary.adminUrl, 'SELECT VERSION() AS v');
  }

  /** Start the server; replay is not paused after a start, and a primary writes its own events. */
  private async launch(m: Member): Promise<void> {
    m.paused = false;
    if (m.node.role === 'primary') m.wrote = true;
    await m.server.start();
  }

  /**
   * Point a running replica at the current primary and, if the primary runs, wait until it
   * follows. A replica holding transactions the primary never had (an old primary that lost
   * writes in a failover) is left running, read-only and not replicating, and this throws;
   * with `keepDiverged` it follows all the same, keeping them (errant GTIDs).
   */
  private async attach(m: Member, options: { keepDiverged?: boolean } = {}): Promise<void> {
    const primary = this.table.primary();
    if (primary.node.running && !options.keepDiverged) {
      const mine = await this.dialect.executed(m.adminUrl);
      const extra = await this.dialect.lacking(primary.adminUrl, mine);
      if (extra !== '') {
        throw new Error(
          `${m.node.name}'s history diverged from ${primary.node.name}'s: it has transactions ${primary.node.name} never had (${extra}), e.g. writes lost in a failover; it runs, read-only, but does not replicate\n${await m.server.logTail()}`,
        );
      }
    }
    await this.dialect.follow(
      m.adminUrl,
      { ...primary.server.sourceAddress, user: URL_USER },
      { applierStopped: m.paused, wasPrimary: m.wrote },
    );
    m.wrote = false;
    m.cut = false;
    m.upstream = primary.node.name;
    if (!primary.node.running) return;
    const outcome =
      this.options.follow === 'settled'
        ? await this.waitUntilSettled(m, primary, FOLLOW_TIMEOUT_MS)
        : await this.waitUntilReceived(m, primary, FOLLOW_TIMEOUT_MS);
    if (!outcome.ok)
      throw new Error(
        outcome.withLog ? `${outcome.why}\n${await m.server.logTail()}` : outcome.why,
      );
  }

  /** follow: 'settled' (see TopologyOptions). */
  private async waitUntilSettled(
    m: Member,
    primary: Member,
    timeoutMs: number,
  ): Promise<FollowOutcome> {
    const name = m.node.name;
    const written = await this.dialect.executed(primary.adminUrl);
    const deadline = Date.now() + timeoutMs;
    let followingSince: number | undefined;
    let last = 'no status yet';
    for (;;) {
      try {
        const status = await this.dialect.status(m.adminUrl);
        if (!status) {
          last = 'not configured as a replica';
        } else if (status.receiver === 'No' && status.receiverErrno !== 0) {
          // The receiver gave up for good (a connection failure shows 'Connecting' and retries).
          const diverged = status.receiverErrno === 1236;
          return {
            ok: false,
            withLog: true,
            why: diverged
              ? `${primary.node.name} refuses ${name} as a replica (its history diverged, or it needs binary logs ${primary.node.name} no longer has): ${status.receiverError}`
              : `${name}'s receiver stopped with error ${status.receiverErrno}: ${status.receiverError}`,
          };
        } else if (status.applierErrno !== 0 && !status.applier) {
          return {
            ok: false,
            withLog: true,
            why: `${name}'s applier stopped with error ${status.applierErrno}: ${status.applierError}`,
          };
        } else if (
          status.receiver === 'Yes' &&
          status.sourcePort === primary.server.sourceAddress.port &&
          (status.applier || m.paused) &&
          (await this.dialect.hasReceived(m.adminUrl, written))
        ) {
          followingSince ??= Date.now();
          if (Date.now() - followingSince >= FOLLOW_SETTLE_MS) return { ok: true };
        } else {
          followingSince = undefined;
          last = `receiver ${status.receiver} from port ${status.sourcePort}, applier ${status.applier ? 'running' : 'stopped'}${status.receiverErrno ? `, last receiver error ${status.receiverErrno}: ${status.receiverError}` : ''}`;
        }
      } catch (err) {
        followingSince = undefined;
        last = (err as Error).message;
      }
      if (Date.now() > deadline) {
        return {
          ok: false,
          withLog: true,
          why: `${name} does not follow ${primary.node.name} after ${timeoutMs} ms (${last})`,
        };
      }
      await sleep(50);
    }
  }

  /** follow: 'received' (see TopologyOptions). */
  private async waitUntilReceived(
    m: Member,
    primary: Member,
    timeoutMs: number,
  ): Promise<FollowOutcome> {
    const written = await this.dialect.executed(primary.adminUrl);
    const deadline = Date.now() + timeoutMs;
    let last = 'no status yet';
    while (Date.now() < deadline) {
      const status = await this.dialect.status(m.adminUrl).catch(() => undefined);
      if (status?.receiver === 'No' && status.receiverErrno !== 0) {
        return {
          ok: false,
          withLog: false,
          why: `${m.node.name}'s receiver stopped with error ${status.receiverErrno}: ${status.receiverError}`,
        };
      }
      if (status?.receiver === 'Yes' && (await this.dialect.hasReceived(m.adminUrl, written)))
        return { ok: true };
      last = status ? `receiver ${status.receiver}` : 'not configured as a replica';
      await sleep(50);
    }
    return {
      ok: false,
      withLog: true,
      why: `${m.node.name} does not follow ${primary.node.name} after ${timeoutMs} ms (${last})`,
    };
  }

  primary(): ClusterNode {
    return this.table.primary().node;
  }

  replicas(): ClusterNode[] {
    return this.table.replicaNodes();
  }

  nodes(): ClusterNode[] {
    return this.table.nodes();
  }

  /** Stop the applier (SQL thread) only: the receiver keeps fetching into the relay log. */
  async pauseReplay(name: string): Promise<void> {
    const m = this.table.runningReplica(name);
    await this.dialect.stopApplier(m.adminUrl);
    m.paused = true;
    if (!this.options.verifyPause) return;
    const status = await this.dialect.status(m.adminUrl);
    if (status?.applier) throw new Error(`${name}'s applier still runs after stopping it`);
  }

  async resumeReplay(name: string): Promise<void> {
    const m = this.table.runningReplica(name);
    await this.dialect.startApplier(m.adminUrl);
    m.paused = false;
  }

  /**
   * Clean shutdown. Replicas following this node first receive everything it committed (up to
   * a few seconds), as a clean shutdown of a primary should leave nothing behind. Then their
   * receivers pause for the moment of the shutdown and resume afterwards, retrying every second
   * as they would after losing any source: MySQL takes 8-11 s to shut down while replicas are
   * connected, because its binlog sender threads do not end when the shutdown asks them to,
   * and killing them first is not enough (replicas reconnect within milliseconds).
   */
  async stop(name: string): Promise<void> {
    const m = this.table.get(name);
    await m.server.thaw();
    if (m.server.running()) {
      const followers = this.followersOf(m);
      await this.handOver(m, followers);
      await Promise.all(
        followers.map((f) => this.dialect.stopReceiver(f.adminUrl).catch(() => {})),
      );
      try {
        let asked = false;
        try {
          const threads = await this.dialect.senderThreads(m.adminUrl);
          await sql.query(m.adminUrl, [...threads.map((id) => `KILL ${id}`), 'SHUTDOWN'].join(';'));
          asked = true;
        } catch {
          // Not answering SQL (still starting, say): finishStop() sends SIGTERM instead.
        }
        await m.server.finishStop(asked);
      } finally {
        await Promise.all(
          followers.map((f) => this.dialect.startReceiver(f.adminUrl).catch(() => {})),
        );
      }
    }
    m.node.running = false;
  }

  /** Running replicas that replicate from `source` (all of them when it is the primary). */
  private followersOf(source: Member): Member[] {
    if (source.node.role !== 'primary') return [];
    return this.table
      .all()
      .filter((m) => m !== source && m.node.role === 'replica' && m.node.running);
  }

  /** Wait (bounded) until every follower has received all `source` committed. */
  private async handOver(source: Member, followers: readonly Member[]): Promise<void> {
    if (followers.length === 0) return;
    let written: string;
    try {
      written = await this.dialect.executed(source.adminUrl);
    } catch {
      return;
    }
    const deadline = Date.now() + HAND_OVER_MS;
    await Promise.all(
      followers.map(async (f) => {
        while (Date.now() < deadline) {
          try {
            if (await this.dialect.hasReceived(f.adminUrl, written)) return;
          } catch {
            return;
          }
          await sleep(20);
        }
      }),
    );
  }

  /** SIGKILL the server: a crash. Its data directory is left as the crash left it. */
  async kill(name: string): Promise<void> {
    const m = this.table.get(name);
    await m.server.kill();
    m.node.running = false;
  }

  /**
   * Start a stopped or killed node (crash recovery included). A replica is pointed at the
   * current primary again and, if that runs, followed until it replicates; replay is not paused
   * any more after a restart.
   */
  async start(name: string): Promise<void> {
    const m = this.table.get(name);
    if (m.server.running()) return;
    await this.launch(m);
    // A cut-off replica stays cut; one left on the old history (its source was not re-pointed
    // at a promotion) stays there: neither is pointed at the current primary.
    if (
      m.node.role === 'replica' &&
      !m.cut &&
      (m.upstream === undefined || m.upstream === this.table.primary().node.name)
    ) {
      await this.attach(m);
    }
  }

  /**
   * Promote a running replica. A running old primary first gets everything it committed to the
   * new one, then is stopped cleanly and left stopped (as a replica of the new primary, so a
   * later start() makes it follow, never a second primary). The new primary applies all it
   * received (also when its replay was paused), forgets its source and accepts writes; the
   * other running replicas are re-pointed at it (all by default, only `options.repoint` if
   * given: the others stay on the old history, their receivers retrying the old source) and
   * keep their pause state.
   */
  async promote(name: string, options: PromoteOptions = {}): Promise<void> {
    const target = this.table.runningReplica(name);
    const old = this.table.primary();
    const d = this.dialect;
    const repoint = options.repoint;
    if (options.keepDiverged && !this.capabilities.has('follow-diverged'))
      notSupported(
        `the ${this.flavour} cluster`,
        'follow-diverged',
        name,
        'in strict mode a replica refuses a source that lacks its GTIDs',
      );
    for (const other of repoint ?? []) {
      const m = this.table.get(other);
      if (m === target || m.node.role !== 'replica')
        throw new Error(`promote(${name}): cannot re-point ${other}: not another replica`);
    }
    if (old.node.running) {
      const written = await d.executed(old.adminUrl);
      const deadline = Date.now() + FOLLOW_TIMEOUT_MS;
      while (!(await d.hasReceived(target.adminUrl, written))) {
        if (Date.now() > deadline) {
          throw new Error(
            `not promoting ${name}: it has not received everything ${old.node.name} committed (${written}) after ${FOLLOW_TIMEOUT_MS} ms`,
          );
        }
        await sleep(20);
      }
      await this.stop(old.node.name);
    }
    // Its relay log is dropped by the reset in detach(): apply everything received first.
    await d.stopReceiver(target.adminUrl);
    const status = await d.status(target.adminUrl);
    if (status && !status.applier) await d.startApplier(target.adminUrl);
    const received = status?.received ?? '';
    if (!(await d.waitApplied(target.adminUrl, received, CATCH_UP_TIMEOUT_MS))) {
      throw new Error(
        `not promoting ${name}: it did not apply what it received (${received}) within ${CATCH_UP_TIMEOUT_MS} ms\n${await target.server.logTail()}`,
      );
    }
    await d.detach(target.adminUrl);
    target.paused = false;
    target.wrote = true;
    target.node.role = 'primary';
    target.upstream = undefined;
    old.node.role = 'replica';
    old.upstream = target.node.name;

    const failures: string[] = [];
    for (const m of this.table.all()) {
      if (m === target || m === old || m.node.role !== 'replica') continue;
      // Left where it is: still a replica, its receiver retrying the old (gone) source.
      if (repoint && !repoint.includes(m.node.name)) continue;
      if (!m.node.running) {
        m.upstream = target.node.name;
        continue;
      }
      try {
        await this.attach(m, { keepDiverged: options.keepDiverged ?? false });
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
    if (failures.length > 0) {
      throw new Error(
        `promoted ${name}, but some replicas do not follow it:\n${failures.join('\n')}`,
      );
    }
  }

  /** Stop the receiver (I/O thread): nothing new arrives; the applier and reads go on. */
  async cutOff(name: string): Promise<void> {
    const m = this.table.runningReplica(name);
    await this.dialect.stopReceiver(m.adminUrl);
    m.cut = true;
    const status = await this.dialect.status(m.adminUrl);
    if (status && status.receiver !== 'No')
      throw new Error(`${name}'s receiver is '${status.receiver}' after stopping it`);
  }

  /** Point the replica at the current primary again and wait until it follows. */
  async reconnect(name: string): Promise<void> {
    const m = this.table.runningReplica(name);
    m.cut = false;
    await this.attach(m);
  }

  /** SIGSTOP the server process: its port accepts connections, nothing answers. */
  async freeze(name: string): Promise<void> {
    const m = this.table.get(name);
    if (!m.server.running()) throw new Error(`${name} is not running`);
    await m.server.freeze();
  }

  async thaw(name: string): Promise<void> {
    await this.table.get(name).server.thaw();
  }

  /**
   * Rebuild a node as a fresh replica of the current primary: SIGKILL it if it runs (its data
   * is thrown away), a new data directory (a new server_uuid) and a new server id (a replica
   * skips events carrying its own id, so the old id would skip everything its old self wrote),
   * then GTID auto-positioning (MariaDB: an empty slave_pos) fetches the primary's whole binary
   * log. Resolves once it has applied everything the primary had.
   */
  async rejoin(name: string): Promise<void> {
    const m = this.table.get(name);
    const primary = this.table.primary();
    if (m === primary) throw new Error(`rejoin(${name}): it is the current primary`);
    if (!primary.node.running)
      throw new Error(`rejoin(${name}): the primary ${primary.node.name} is not running`);
    await this.kill(name);
    m.serverId = Math.max(...this.table.all().map((x) => x.serverId)) + 1;
    await m.server.reinitialise(m.serverId);
    m.node.role = 'replica';
    m.wrote = false;
    m.cut = false;
    await this.launch(m);
    await this.attach(m);
    const written = await this.dialect.executed(primary.adminUrl);
    if (!(await this.dialect.waitApplied(m.adminUrl, written, CATCH_UP_TIMEOUT_MS))) {
      throw new Error(
        `rejoin(${name}): it did not apply ${written} from ${primary.node.name} within ${CATCH_UP_TIMEOUT_MS} ms\n${await m.server.logTail()}`,
      );
    }
  }

  async positions(): Promise<Record<string, string>> {
    return this.table.positions((m) => this.dialect.position(m.adminUrl, m.node.role));
  }

  /** Run SQL as root on the node's `test` database; rows of the last statement. */
  async exec(name: string, text: string): Promise<unknown[]> {
    return sql.query(this.table.get(name).node.url, text);
  }

  /** Stop every server and remove what the provider made (the data is thrown away). Idempotent. */
  teardown(): Promise<void> {
    this.tornDown ??= (async () => {
      await this.dispose();
      this.table.allStopped();
    })();
    return this.tornDown;
  }
}
