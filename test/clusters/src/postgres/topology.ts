// A PostgreSQL primary plus streaming replicas: the Cluster contract on top of the SQL in
// sql.ts. Where the servers run (child processes, containers) is the provider's part, given as
// one PgServer per node: src/providers/local/postgres.ts and src/providers/testcontainers.ts are
// thin entries that build the servers and hand them here. What the two providers do differently
// is a PgTopologyOptions field, named for the behaviour.

import { notSupported, ownClusterCapabilities } from '../capabilities.js';
import { NodeTable } from '../node-table.js';
import type { Cluster, ClusterCapability, ClusterNode, PromoteOptions } from '../types.js';
import * as sql from './sql.js';

const STREAMING_TIMEOUT_MS = 30_000;
// How long a re-pointed replica gets to follow the new primary after a reload before it is
// restarted (repoint: 'reload-or-restart').
const RELOAD_FOLLOW_MS = 5_000;

// What a standby logs when the primary's new timeline forked off before its own position.
const DIVERGED =
  /forked off current database system timeline|is not a child of this server's history/;

/** Where a standby streams from, as PgServer.configure() gets it. */
export interface Upstream {
  /** primary_conninfo naming the upstream server (see conninfo()). */
  readonly conninfo: string;
  /** Cut off by cutOff(): a standby that receives nothing (no primary_conninfo). */
  readonly cut: boolean;
}

/** One node's server process, wherever it runs. */
export interface PgServer {
  /** The node as the tests see it; the topology keeps `role`, the server and topology `running`. */
  readonly node: ClusterNode;
  /** Where the other servers reach this one to stream from it. */
  readonly sourceAddress: { readonly host: string; readonly port: number };
  /** The server runs (as far as the provider can tell). */
  running(): boolean;
  /** Start the server, set `node.running`, and resolve once it accepts connections. */
  start(): Promise<void>;
  /** Fast shutdown (a frozen server is thawed first); resolves once the server is gone. */
  stop(): Promise<void>;
  /** SIGKILL every process of the server at once: a host crash (a frozen one too). */
  kill(): Promise<void>;
  /** SIGSTOP every process of the server; nothing if it is frozen already. */
  freeze(): Promise<void>;
  /** SIGCONT a frozen server; nothing if it is not frozen. */
  thaw(): Promise<void>;
  /**
   * Configure the node as a primary (`upstream` undefined) or as a standby of `upstream`. On a
   * running server it takes effect at reload(), on a stopped one at its next start.
   */
  configure(upstream: Upstream | undefined): Promise<void>;
  /** Make a running server read its configuration again. */
  reload(): Promise<void>;
  /**
   * End the server if it runs (its data is thrown away; `node.running` is false from then on)
   * and replace its data by a base backup of `primary`, set up as a standby streaming from
   * `conninfo`. Does not start it.
   */
  rebuild(primary: this, conninfo: string): Promise<void>;
  /** Size of the server's log now: where logSince() of a later event starts. */
  logSize(): Promise<number>;
  /** The server's log from `offset` on. */
  logSince(offset: number): Promise<string>;
  /** The log to show in an error about something that happened after `offset`. */
  logContext(offset: number): Promise<string>;
}

/** Where the local and the container provider differ; each field says why. */
export interface PgTopologyOptions {
  /**
   * Whether a replica follows the primary only when its WAL receiver's sender port is the
   * primary's port (local: every node has its own port on 127.0.0.1), or whenever it streams the
   * primary's timeline (containers: every server listens on 5432 behind a network alias, and
   * `node.port` is the port published on this machine, which the receiver never sees).
   */
  readonly matchSenderPort: boolean;
  /**
   * While waiting for a replica to follow, read its log (for the "forked off" of a diverged
   * history) every this many polls, and once more at the deadline: 1 locally (a file read), 5
   * in containers (each read is an exec in the container).
   */
  readonly readLogEvery: number;
  /**
   * pauseReplay()/resumeReplay() refuse a node that is not a running replica (local); the
   * container provider never checked and lets the server answer.
   */
  readonly replayNeedsRunningReplica: boolean;
  /**
   * How promote() re-points a running replica at the new primary.
   * - 'reload-or-restart' (local): configure and reload every re-pointed replica (a cut-off one
   *   too), give it RELOAD_FOLLOW_MS to stream the new timeline (checked as by start()); one
   *   whose log says its history diverged is reported, one that does not follow yet is
   *   restarted. What fails is collected, and promote() throws after the loop.
   * - 'reload' (containers): cut-off replicas are left as they are; a running one is configured,
   *   reloaded and given STREAMING_TIMEOUT_MS to stream the new timeline, and the first that
   *   does not makes promote() throw at once.
   */
  readonly repoint: 'reload-or-restart' | 'reload';
}

interface Member {
  readonly server: PgServer;
  readonly node: ClusterNode;
  /** The node a replica is configured to stream from (undefined for a primary). */
  upstream: string | undefined;
  /** Cut off by cutOff(): a standby without primary_conninfo, receiving nothing. */
  cut: boolean;
}

type FollowOutcome = 'following' | 'diverged' | 'timeout';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** primary_conninfo of `replica` streaming from `upstream`. */
export function conninfo(upstream: PgServer, replica: PgServer): string {
  const { host, port } = upstream.sourceAddress;
  return `host=${host} port=${port} user=postgres application_name=${replica.node.name}`;
}

export class PgTopology implements Cluster {
  readonly flavour = 'postgres' as const;
  readonly capabilities: ReadonlySet<ClusterCapability> = ownClusterCapabilities('postgres');
  protected readonly table: NodeTable<Member>;
  private serverVersion = '';
  private tornDown: Promise<void> | undefined;

  /**
   * `servers[0]` is the primary (n0), the others its replicas. `dispose` stops every server and
   * removes what the provider made (teardown()).
   */
  constructor(
    readonly target: string,
    servers: readonly PgServer[],
    private readonly options: PgTopologyOptions,
    private readonly dispose: () => Promise<void>,
  ) {
    const members = servers.map((server, i) => ({
      server,
      node: server.node,
      upstream: i === 0 ? undefined : servers[0]!.node.name,
      cut: false,
    }));
    this.table = new NodeTable(target, members);
  }

  get version(): string {
    return this.serverVersion;
  }

  /** Read the server version from the primary (once it accepts connections). */
  async readVersion(): Promise<void> {
    this.serverVersion = await sql.serverVersion(this.table.primary().node.url);
  }

  /** Start the primary, then every replica at once, each until it follows the primary. */
  async launchAll(): Promise<void> {
    const primary = this.table.primary();
    await this.launch(primary);
    await Promise.all(
      this.table
        .all()
        .filter((m) => m !== primary)
        .map((m) => this.launch(m)),
    );
  }

  /** Start the server and wait until it accepts connections; a replica also until it follows. */
  private async launch(m: Member): Promise<void> {
    const logOffset = await m.server.logSize();
    await m.server.start();
    const primary = this.table.primary();
    // Only a replica configured to stream from the running primary is waited for: a cut-off
    // one receives nothing, and one left on the old history follows a primary that is gone.
    if (
      m.node.role === 'replica' &&
      primary.node.running &&
      !m.cut &&
      m.upstream === primary.node.name
    ) {
      const outcome = await this.waitUntilFollowing(m, primary, logOffset, STREAMING_TIMEOUT_MS);
      if (outcome !== 'following')
        throw new Error(await this.notFollowing(m, primary, outcome, logOffset));
    }
  }

  /**
   * Wait until a replica streams the primary's current timeline from the primary. 'diverged'
   * as soon as the replica's log says the primary's timeline forked off before the replica's
   * own position: it has WAL the primary never had (the old primary after a crash with
   * unreplicated writes), and no amount of waiting fixes that.
   */
  private async waitUntilFollowing(
    m: Member,
    primary: Member,
    logOffset: number,
    timeoutMs: number,
  ): Promise<FollowOutcome> {
    const timeline = await sql.primaryTimeline(primary.node.url);
    const expect = this.options.matchSenderPort
      ? { senderPort: primary.node.port, timeline }
      : { timeline };
    const every = this.options.readLogEvery;
    const deadline = Date.now() + timeoutMs;
    for (let i = 0; ; i++) {
      if (await sql.waitForStreaming(m.node.url, expect, 0)) return 'following';
      const log =
        i % every === every - 1 || Date.now() > deadline ? await m.server.logSince(logOffset) : '';
      if (DIVERGED.test(log)) return 'diverged';
      if (Date.now() > deadline) return 'timeout';
      await sleep(50);
    }
  }

  private async notFollowing(
    m: Member,
    primary: Member,
    outcome: 'diverged' | 'timeout',
    logOffset: number,
  ): Promise<string> {
    const name = m.node.name;
    const why =
      outcome === 'diverged'
        ? `${name}'s history diverged from ${primary.node.name}'s (it has WAL past the point where ${primary.node.name}'s timeline forked off, e.g. writes lost in a failover); it runs, but cannot replicate from ${primary.node.name} without being rebuilt`
        : `${name} accepts connections but does not stream ${primary.node.name}'s timeline after ${STREAMING_TIMEOUT_MS} ms`;
    return `${why}\n${await m.server.logContext(logOffset)}`;
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

  private replayTarget(name: string): Member {
    return this.options.replayNeedsRunningReplica
      ? this.table.runningReplica(name)
      : this.table.get(name);
  }

  async pauseReplay(name: string): Promise<void> {
    await sql.pauseReplay(this.replayTarget(name).node.url);
  }

  async resumeReplay(name: string): Promise<void> {
    await sql.resumeReplay(this.replayTarget(name).node.url);
  }

  /** Fast shutdown (what `pg_ctl stop -m fast` does). */
  async stop(name: string): Promise<void> {
    const m = this.table.get(name);
    await m.server.stop();
    m.node.running = false;
  }

  /** SIGKILL the server's processes at once: a host crash. The data is left as the crash left it. */
  async kill(name: string): Promise<void> {
    const m = this.table.get(name);
    await m.server.kill();
    m.node.running = false;
  }

  /**
   * Start a stopped or killed node (crash recovery included); a replica configured to stream
   * from the running primary must also follow it.
   */
  async start(name: string): Promise<void> {
    const m = this.table.get(name);
    if (m.server.running()) return;
    await this.launch(m);
  }

  /**
   * A clean stop of the old primary first (it streams everything up to its shutdown checkpoint,
   * so every connected replica can follow the new timeline, and there is never a second writer),
   * then pg_promote(). The old primary is left stopped, but as a standby of the new primary, so
   * a later start() cannot make it a second primary (it can only follow if it had nothing the
   * new primary lacks). The other replicas are re-pointed (all by default, only
   * `options.repoint` if given; the others stay on the old history, following nobody).
   */
  async promote(name: string, options: PromoteOptions = {}): Promise<void> {
    if (options.keepDiverged)
      notSupported(
        'the PostgreSQL cluster',
        'follow-diverged',
        name,
        'a standby that replayed past the switch point cannot follow the new timeline',
      );
    const target = this.table.runningReplica(name);
    const old = this.table.primary();
    const repoint = options.repoint;
    for (const other of repoint ?? []) {
      const m = this.table.get(other);
      if (m === target || m.node.role !== 'replica')
        throw new Error(`promote(${name}): cannot re-point ${other}: not another replica`);
    }
    if (old.node.running) await this.stop(old.node.name);
    await sql.promote(target.node.url);
    const timeline =
      this.options.repoint === 'reload' ? await sql.primaryTimeline(target.node.url) : undefined;
    target.node.role = 'primary';
    old.node.role = 'replica';
    await this.pointAt(target, undefined);
    await this.pointAt(old, target);

    const failures: string[] = [];
    for (const m of this.table.all()) {
      if (m === target || m === old || m.node.role !== 'replica') continue;
      // Left where it is: still a replica of this cluster, streaming from nobody (the old
      // primary is gone) on the old history.
      if (repoint && !repoint.includes(m.node.name)) continue;
      if (this.options.repoint === 'reload') {
        m.upstream = target.node.name;
        if (m.cut) continue;
      }
      await this.pointAt(m, target);
      if (!m.node.running || !m.server.running()) continue;
      if (timeline !== undefined) {
        await m.server.reload();
        if (!(await sql.waitForStreaming(m.node.url, { timeline }, STREAMING_TIMEOUT_MS)))
          throw new Error(`${m.node.name} does not follow ${name} on timeline ${timeline}`);
        continue;
      }
      const offset = await m.server.logSize();
      await m.server.reload();
      const outcome = await this.waitUntilFollowing(m, target, offset, RELOAD_FOLLOW_MS);
      if (outcome === 'following') continue;
      if (outcome === 'diverged') {
        failures.push(await this.notFollowing(m, target, outcome, offset));
        continue;
      }
      try {
        await this.stop(m.node.name);
        await this.launch(m);
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

  /** Configure `m` as a primary (`upstream` undefined) or as a standby of `upstream`. */
  private async pointAt(m: Member, upstream: Member | undefined): Promise<void> {
    m.upstream = upstream?.node.name;
    await m.server.configure(
      upstream && { conninfo: conninfo(upstream.server, m.server), cut: m.cut },
    );
  }

  /**
   * Clear primary_conninfo and reload: PostgreSQL 13+ stops the WAL receiver and starts none,
   * while the standby keeps serving reads of what it replayed. Resolves once no receiver runs.
   */
  async cutOff(name: string): Promise<void> {
    const m = this.table.runningReplica(name);
    if (m.cut) return;
    m.cut = true;
    await this.pointAt(m, m.upstream === undefined ? undefined : this.table.get(m.upstream));
    await m.server.reload();
    const deadline = Date.now() + STREAMING_TIMEOUT_MS;
    while ((await sql.receiver(m.node.url)) !== undefined) {
      if (Date.now() > deadline)
        throw new Error(
          `${name}'s WAL receiver still runs ${STREAMING_TIMEOUT_MS} ms after the cut`,
        );
      await sleep(50);
    }
  }

  /** Restore primary_conninfo (to the current primary) and reload; resolves once it streams. */
  async reconnect(name: string): Promise<void> {
    const m = this.table.runningReplica(name);
    const primary = this.table.primary();
    m.cut = false;
    const offset = await m.server.logSize();
    await this.pointAt(m, primary);
    await m.server.reload();
    if (!primary.node.running) return;
    const outcome = await this.waitUntilFollowing(m, primary, offset, STREAMING_TIMEOUT_MS);
    if (outcome !== 'following')
      throw new Error(await this.notFollowing(m, primary, outcome, offset));
  }

  /** SIGSTOP the server's processes: its port accepts connections, nothing answers. */
  async freeze(name: string): Promise<void> {
    const m = this.table.get(name);
    if (!m.server.running()) throw new Error(`${name} is not running`);
    await m.server.freeze();
  }

  async thaw(name: string): Promise<void> {
    await this.table.get(name).server.thaw();
  }

  /**
   * Rebuild a node as a fresh standby of the current primary: end it if it runs (its data is
   * thrown away), a base backup of the primary in its place, then start it streaming; resolves
   * once it follows.
   */
  async rejoin(name: string): Promise<void> {
    const m = this.table.get(name);
    const primary = this.table.primary();
    if (m === primary) throw new Error(`rejoin(${name}): it is the current primary`);
    if (!primary.node.running)
      throw new Error(`rejoin(${name}): the primary ${primary.node.name} is not running`);
    m.cut = false;
    await m.server.rebuild(primary.server, conninfo(primary.server, m.server));
    m.node.role = 'replica';
    m.upstream = primary.node.name;
    await this.launch(m);
  }

  async positions(): Promise<Record<string, string>> {
    return this.table.positions((m) => sql.position(m.node.url));
  }

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
