// A MySQL or MariaDB source plus GTID replicas as local child processes.
//
// Every node's data directory is a copy of one initialised template (see mysql-template.ts);
// all nodes start at once, the source creates the `test` database, and each replica is pointed
// at the source with GTID auto-positioning, so it fetches the source's whole binary log. Nodes
// run as the `mysql` user with --defaults-file (no option file of the machine is read: a MariaDB
// already running on this machine is never touched).

import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { capabilitySet } from '../../capabilities.js';
import { dialectFor, type ReplicationDialect } from '../../mysql/dialect.js';
import * as sql from '../../mysql/sql.js';
import { freePorts } from '../../ports.js';
import {
  type FrozenTree,
  freezeTree,
  killTree,
  type ServerProcess,
  stopServer,
} from '../../process.js';
import type { Runtime, SystemUser } from '../../runtime.js';
import { copyTree, createRunDir, type RunDir, reapStaleRunDirs } from '../../tempdir.js';
import type { Cluster, ClusterCapability, ClusterNode, PromoteOptions } from '../../types.js';
import { ADMIN_USER, DATABASE, HOST, nodeConfig, URL_USER } from './mysql-config.js';
import type { MysqlBinaries } from './mysql-targets.js';
import { dataTemplate } from './mysql-template.js';

export const RUN_DIR_PREFIX = 'tidemark-my-';
const SERVER_USER = 'mysql';
const START_TIMEOUT_MS = 90_000;
const FOLLOW_TIMEOUT_MS = 30_000;
const CATCH_UP_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 60_000;
// How long a clean stop waits for replicas to receive what the stopping primary committed.
const HAND_OVER_MS = 5_000;
// A replica counts as following only if it still does after this long: a source that refuses
// it (error 1236) does so right after the receiver reports 'Yes'.
const FOLLOW_SETTLE_MS = 150;

interface NodeState {
  readonly node: ClusterNode;
  /** Distinct per node; a rejoined node gets a new one (replicas skip their own id's events). */
  serverId: number;
  /** The harness's own account on this node (see ADMIN_USER). */
  readonly adminUrl: string;
  readonly dataHost: string;
  readonly configInner: string;
  readonly logHost: string;
  proc: ServerProcess | undefined;
  /** Applier stopped by pauseReplay() and not resumed since. */
  paused: boolean;
  /** Has written its own binary log events as a primary since it last followed a source. */
  wrote: boolean;
  /** The node a replica was last pointed at (undefined for a primary). */
  upstream: string | undefined;
  /** Receiver stopped by cutOff() and not reconnected since. */
  cut: boolean;
  /** Stopped with SIGSTOP by freeze(). */
  frozen: FrozenTree | undefined;
}

/** Why a replica does not follow its source. */
type FollowOutcome = { ok: true } | { ok: false; diverged: boolean; why: string };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Wait for a process to exit, at most `ms` (the timer is cleared, so it keeps nobody alive). */
async function exitedWithin(proc: ServerProcess, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    proc.exited,
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function logContext(state: NodeState): string {
  return `--- ${state.node.name} log (${state.logHost}) ---\n${tail(state.logHost)}`;
}

/** Resident memory of a process in bytes (Linux), or undefined. */
export function residentBytes(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export class LocalMysqlCluster implements Cluster {
  readonly flavour: 'mysql' | 'mariadb';
  readonly capabilities: ReadonlySet<ClusterCapability> = capabilitySet(
    'pause',
    'kill',
    'promote',
    'promote-partial',
    'cut-off',
    'freeze',
    'rejoin',
  );
  private serverVersion = '';
  private readonly states = new Map<string, NodeState>();
  private readonly dialect: ReplicationDialect;
  private tornDown: Promise<void> | undefined;
  /** Milliseconds spent making the template data directory for this cluster (0 if reused). */
  templateMs = 0;
  private lastServerId = 0;

  private constructor(
    readonly target: string,
    private readonly bins: MysqlBinaries,
    private readonly user: SystemUser,
    private readonly runDir: RunDir,
  ) {
    this.flavour = bins.flavour;
    this.dialect = dialectFor(bins.flavour);
  }

  get version(): string {
    return this.serverVersion;
  }

  private get runtime(): Runtime {
    return this.bins.runtime;
  }

  static async start(bins: MysqlBinaries, replicas: number): Promise<LocalMysqlCluster> {
    if (!Number.isInteger(replicas) || replicas < 0)
      throw new Error(`replicas must be an integer >= 0, got ${replicas}`);
    const runtime = bins.runtime;
    // Data is thrown away: SIGKILL is the right way to stop what a crashed test process left.
    await reapStaleRunDirs(runtime, RUN_DIR_PREFIX, 'SIGKILL');
    const user = await runtime.ensureUser(SERVER_USER);
    const runDir = await createRunDir(runtime, RUN_DIR_PREFIX, user);
    const cluster = new LocalMysqlCluster(bins.target, bins, user, runDir);
    try {
      await cluster.build(replicas);
      return cluster;
    } catch (err) {
      await cluster.teardown().catch(() => {});
      throw err;
    }
  }

  private async build(replicas: number): Promise<void> {
    const ports = await freePorts(replicas + 1, HOST);
    for (let i = 0; i <= replicas; i++) {
      const name = `n${i}`;
      const port = ports[i]!;
      this.states.set(name, {
        node: {
          name,
          role: i === 0 ? 'primary' : 'replica',
          host: HOST,
          port,
          url: `mysql://${URL_USER}@${HOST}:${port}/${DATABASE}`,
          running: false,
        },
        serverId: ++this.lastServerId,
        adminUrl: `mysql://${ADMIN_USER}@${HOST}:${port}/`,
        dataHost: join(this.runDir.host, name),
        configInner: join(this.runDir.inner, `${name}.cnf`),
        logHost: join(this.runDir.host, `${name}.log`),
        proc: undefined,
        paused: false,
        wrote: false,
        upstream: i === 0 ? undefined : 'n0',
        cut: false,
        frozen: undefined,
      });
    }
    const template = await dataTemplate(this.bins, this.user);
    this.templateMs = template.initMs;
    for (const state of this.states.values()) {
      await copyTree(template.dataHost, state.dataHost);
      // Each node generates its own server_uuid on first start.
      await rm(join(state.dataHost, 'auto.cnf'), { force: true });
      await this.writeConfig(state);
    }
    // All servers start at once (start-up is mostly waiting on InnoDB), then replication.
    const all = [...this.states.values()];
    await Promise.all(all.map((s) => this.spawnAndWait(s)));
    const primary = this.state('n0');
    await sql.query(primary.adminUrl, `CREATE DATABASE IF NOT EXISTS ${DATABASE}`);
    await Promise.all(all.filter((s) => s !== primary).map((s) => this.attach(s)));
    // Resolve only once every replica has the `test` database its URL names.
    const written = await this.dialect.executed(primary.adminUrl);
    for (const state of all) {
      if (state === primary) continue;
      if (!(await this.dialect.waitApplied(state.adminUrl, written, CATCH_UP_TIMEOUT_MS))) {
        throw new Error(
          `${state.node.name} did not apply ${written} from n0 within ${CATCH_UP_TIMEOUT_MS} ms\n${logContext(state)}`,
        );
      }
    }
    this.serverVersion = await sql.scalar(primary.adminUrl, 'SELECT VERSION() AS v');
  }

  private async writeConfig(state: NodeState): Promise<void> {
    const inner = this.runDir.inner;
    const config = nodeConfig(
      this.flavour,
      { serverId: state.serverId, port: state.node.port },
      {
        dataDir: join(inner, state.node.name),
        socket: join(inner, `${state.node.name}.sock`),
        pidFile: join(inner, `${state.node.name}.pid`),
      },
    );
    await writeFile(this.runtime.hostPath(state.configInner), config);
  }

  private state(name: string): NodeState {
    const state = this.states.get(name);
    if (!state)
      throw new Error(
        `no node '${name}' in this ${this.target} cluster (nodes: ${[...this.states.keys()].join(', ')})`,
      );
    return state;
  }

  private currentPrimary(): NodeState {
    for (const state of this.states.values()) if (state.node.role === 'primary') return state;
    throw new Error('cluster has no primary');
  }

  /** Start the server process and wait until it accepts connections. */
  private async spawnAndWait(state: NodeState): Promise<void> {
    const args = [`--defaults-file=${state.configInner}`];
    // Replicas refuse writes from every client from their first moment; appliers are exempt.
    if (state.node.role === 'replica') args.push(...this.dialect.readOnlyOptions);
    const proc = this.runtime.spawn(this.bins.server, args, state.logHost, {
      user: this.user,
      emergencySignal: 'SIGKILL',
    });
    state.proc = proc;
    state.paused = false;
    if (state.node.role === 'primary') state.wrote = true;
    this.runDir.recordPid(proc.pid);
    state.node.running = true;
    proc.exited.then(() => {
      if (state.proc === proc) state.node.running = false;
    });
    await sql.waitUntilAccepting(state.adminUrl, {
      timeoutMs: START_TIMEOUT_MS,
      alive: () => proc.running(),
      context: () => logContext(state),
    });
  }

  /**
   * Point a running replica at the current primary and, if the primary runs, wait until it
   * follows. A replica holding transactions the primary never had (an old primary that lost
   * writes in a failover) is left running, read-only and not replicating, and this throws.
   */
  private async attach(state: NodeState): Promise<void> {
    const primary = this.currentPrimary();
    if (primary.node.running) {
      const mine = await this.dialect.executed(state.adminUrl);
      const extra = await this.dialect.lacking(primary.adminUrl, mine);
      if (extra !== '') {
        throw new Error(
          `${state.node.name}'s history diverged from ${primary.node.name}'s: it has transactions ${primary.node.name} never had (${extra}), e.g. writes lost in a failover; it runs, read-only, but does not replicate\n${logContext(state)}`,
        );
      }
    }
    await this.dialect.follow(
      state.adminUrl,
      { host: HOST, port: primary.node.port, user: URL_USER },
      { applierStopped: state.paused, wasPrimary: state.wrote },
    );
    state.wrote = false;
    state.cut = false;
    state.upstream = primary.node.name;
    if (!primary.node.running) return;
    const outcome = await this.waitUntilFollowing(state, primary, FOLLOW_TIMEOUT_MS);
    if (!outcome.ok) throw new Error(`${outcome.why}\n${logContext(state)}`);
  }

  /** Wait until the replica's receiver is connected to `primary` and has all it had at the start. */
  private async waitUntilFollowing(
    state: NodeState,
    primary: NodeState,
    timeoutMs: number,
  ): Promise<FollowOutcome> {
    const name = state.node.name;
    const written = await this.dialect.executed(primary.adminUrl);
    const deadline = Date.now() + timeoutMs;
    let followingSince: number | undefined;
    let last = 'no status yet';
    for (;;) {
      try {
        const status = await this.dialect.status(state.adminUrl);
        if (!status) {
          last = 'not configured as a replica';
        } else if (status.receiver === 'No' && status.receiverErrno !== 0) {
          // The receiver gave up for good (a connection failure shows 'Connecting' and retries).
          const diverged = status.receiverErrno === 1236;
          return {
            ok: false,
            diverged,
            why: diverged
              ? `${primary.node.name} refuses ${name} as a replica (its history diverged, or it needs binary logs ${primary.node.name} no longer has): ${status.receiverError}`
              : `${name}'s receiver stopped with error ${status.receiverErrno}: ${status.receiverError}`,
          };
        } else if (status.applierErrno !== 0 && !status.applier) {
          return {
            ok: false,
            diverged: false,
            why: `${name}'s applier stopped with error ${status.applierErrno}: ${status.applierError}`,
          };
        } else if (
          status.receiver === 'Yes' &&
          status.sourcePort === primary.node.port &&
          (status.applier || state.paused) &&
          (await this.dialect.hasReceived(state.adminUrl, written))
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
          diverged: false,
          why: `${name} does not follow ${primary.node.name} after ${timeoutMs} ms (${last})`,
        };
      }
      await sleep(50);
    }
  }

  primary(): ClusterNode {
    return this.currentPrimary().node;
  }

  replicas(): ClusterNode[] {
    return this.nodes().filter((n) => n.role === 'replica');
  }

  nodes(): ClusterNode[] {
    return [...this.states.values()].map((s) => s.node);
  }

  private runningReplica(name: string): NodeState {
    const state = this.state(name);
    if (state.node.role !== 'replica') throw new Error(`${name} is not a replica`);
    if (!state.node.running) throw new Error(`${name} is not running`);
    return state;
  }

  /** Stop the applier (SQL thread) only: the receiver keeps fetching into the relay log. */
  async pauseReplay(name: string): Promise<void> {
    const state = this.runningReplica(name);
    await this.dialect.stopApplier(state.adminUrl);
    state.paused = true;
    const status = await this.dialect.status(state.adminUrl);
    if (status?.applier) throw new Error(`${name}'s applier still runs after stopping it`);
  }

  async resumeReplay(name: string): Promise<void> {
    const state = this.runningReplica(name);
    await this.dialect.startApplier(state.adminUrl);
    state.paused = false;
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
    const state = this.state(name);
    const proc = state.proc;
    this.unfreeze(state);
    if (proc?.running()) {
      const followers = this.followersOf(state);
      await this.handOver(state, followers);
      await Promise.all(
        followers.map((f) => this.dialect.stopReceiver(f.adminUrl).catch(() => {})),
      );
      try {
        let asked = false;
        try {
          const threads = await this.dialect.senderThreads(state.adminUrl);
          await sql.query(
            state.adminUrl,
            [...threads.map((id) => `KILL ${id}`), 'SHUTDOWN'].join(';'),
          );
          asked = true;
        } catch {
          // Not answering SQL (still starting, say): SIGTERM is the same clean shutdown.
        }
        if (asked) await exitedWithin(proc, STOP_TIMEOUT_MS);
        await stopServer(proc, 'SIGTERM', STOP_TIMEOUT_MS);
      } finally {
        await Promise.all(
          followers.map((f) => this.dialect.startReceiver(f.adminUrl).catch(() => {})),
        );
      }
    }
    state.node.running = false;
  }

  /** Running replicas that replicate from `source` (all of them when it is the primary). */
  private followersOf(source: NodeState): NodeState[] {
    if (source.node.role !== 'primary') return [];
    return [...this.states.values()].filter(
      (s) => s !== source && s.node.role === 'replica' && s.node.running,
    );
  }

  /** Wait (bounded) until every follower has received all `source` committed. */
  private async handOver(source: NodeState, followers: readonly NodeState[]): Promise<void> {
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
    const state = this.state(name);
    const proc = state.proc;
    this.unfreeze(state);
    if (proc?.running()) {
      await killTree(proc.pid);
      // The child is unref'd: a bare script with nothing else pending would otherwise exit
      // before Node reports the exit (the timer keeps it alive until then).
      await exitedWithin(proc, 10_000);
    }
    state.node.running = false;
  }

  /**
   * Start a stopped or killed node (crash recovery included). A replica is pointed at the
   * current primary again and, if that runs, followed until it replicates; replay is not paused
   * any more after a restart.
   */
  async start(name: string): Promise<void> {
    const state = this.state(name);
    if (state.proc?.running()) return;
    await this.spawnAndWait(state);
    // A cut-off replica stays cut; one left on the old history (its source was not re-pointed
    // at a promotion) stays there: neither is pointed at the current primary.
    if (
      state.node.role === 'replica' &&
      !state.cut &&
      (state.upstream === undefined || state.upstream === this.currentPrimary().node.name)
    ) {
      await this.attach(state);
    }
  }

  /**
   * Promote a running replica. A running old primary first gets everything it committed to the
   * new one, then is stopped cleanly and left stopped (as a replica of the new primary, so a
   * later start() makes it follow, never a second primary). The new primary applies all it
   * received (also when its replay was paused), forgets its source and accepts writes; the
   * other running replicas are re-pointed at it and keep their pause state.
   */
  async promote(name: string, options: PromoteOptions = {}): Promise<void> {
    const target = this.runningReplica(name);
    const old = this.currentPrimary();
    const d = this.dialect;
    const repoint = options.repoint;
    for (const other of repoint ?? []) {
      const state = this.state(other);
      if (state === target || state.node.role !== 'replica')
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
    // Its relay log is dropped by the reset below: apply everything received first.
    await d.stopReceiver(target.adminUrl);
    const status = await d.status(target.adminUrl);
    if (status && !status.applier) await d.startApplier(target.adminUrl);
    const received = status?.received ?? '';
    if (!(await d.waitApplied(target.adminUrl, received, CATCH_UP_TIMEOUT_MS))) {
      throw new Error(
        `not promoting ${name}: it did not apply what it received (${received}) within ${CATCH_UP_TIMEOUT_MS} ms\n${logContext(target)}`,
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
    for (const state of this.states.values()) {
      if (state === target || state === old || state.node.role !== 'replica') continue;
      // Left where it is: still a replica, its receiver retrying the old (gone) source.
      if (repoint && !repoint.includes(state.node.name)) continue;
      if (!state.node.running) {
        state.upstream = target.node.name;
        continue;
      }
      try {
        await this.attach(state);
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
    const state = this.runningReplica(name);
    await this.dialect.stopReceiver(state.adminUrl);
    state.cut = true;
    const status = await this.dialect.status(state.adminUrl);
    if (status && status.receiver !== 'No')
      throw new Error(`${name}'s receiver is '${status.receiver}' after stopping it`);
  }

  /** Point the replica at the current primary again and wait until it follows. */
  async reconnect(name: string): Promise<void> {
    const state = this.runningReplica(name);
    state.cut = false;
    await this.attach(state);
  }

  /** SIGSTOP the server process: its port accepts connections, nothing answers. */
  async freeze(name: string): Promise<void> {
    const state = this.state(name);
    if (state.frozen) return;
    if (!state.proc?.running()) throw new Error(`${name} is not running`);
    state.frozen = freezeTree(state.proc.pid);
  }

  async thaw(name: string): Promise<void> {
    this.unfreeze(this.state(name));
  }

  private unfreeze(state: NodeState): void {
    state.frozen?.thaw();
    state.frozen = undefined;
  }

  /**
   * Rebuild a node as a fresh replica of the current primary: SIGKILL it if it runs (its data
   * is thrown away), a new data directory from the template (a new server_uuid), then GTID
   * auto-positioning (MariaDB: an empty slave_pos) fetches the primary's whole binary log.
   * Resolves once it has applied everything the primary had.
   */
  async rejoin(name: string): Promise<void> {
    const state = this.state(name);
    const primary = this.currentPrimary();
    if (state === primary) throw new Error(`rejoin(${name}): it is the current primary`);
    if (!primary.node.running)
      throw new Error(`rejoin(${name}): the primary ${primary.node.name} is not running`);
    await this.kill(name);
    await rm(state.dataHost, { recursive: true, force: true });
    const template = await dataTemplate(this.bins, this.user);
    await copyTree(template.dataHost, state.dataHost);
    await rm(join(state.dataHost, 'auto.cnf'), { force: true });
    // A new server: a server id of its own too, or it would skip every event its old self
    // wrote (a replica ignores events carrying its own server id).
    state.serverId = ++this.lastServerId;
    await this.writeConfig(state);
    state.node.role = 'replica';
    state.paused = false;
    state.wrote = false;
    state.cut = false;
    await this.spawnAndWait(state);
    await this.attach(state);
    const written = await this.dialect.executed(primary.adminUrl);
    if (!(await this.dialect.waitApplied(state.adminUrl, written, CATCH_UP_TIMEOUT_MS))) {
      throw new Error(
        `rejoin(${name}): it did not apply ${written} from ${primary.node.name} within ${CATCH_UP_TIMEOUT_MS} ms\n${logContext(state)}`,
      );
    }
  }

  async positions(): Promise<Record<string, string>> {
    const running = this.nodes().filter((n) => n.running);
    const texts = await Promise.all(
      running.map((n) => this.dialect.position(this.state(n.name).adminUrl, n.role)),
    );
    return Object.fromEntries(running.map((n, i) => [n.name, texts[i]!]));
  }

  /** Run SQL as root on the node's `test` database; rows of the last statement. */
  async exec(name: string, text: string): Promise<unknown[]> {
    return sql.query(this.state(name).node.url, text);
  }

  /** SIGKILL every server (the data is thrown away), wait for them, delete the run directory. */
  teardown(): Promise<void> {
    this.tornDown ??= (async () => {
      await Promise.all(
        [...this.states.values()].map(async (s) => {
          this.unfreeze(s);
          if (s.proc) await stopServer(s.proc, 'SIGKILL', 10_000);
          s.node.running = false;
        }),
      );
      await this.runDir.remove();
    })();
    return this.tornDown;
  }

  /** Where the data directories, option files and logs are (for debugging a failed test). */
  get directory(): string {
    return this.runDir.host;
  }

  /** The harness's own account on a node (it may toggle read_only; root on MariaDB may not). */
  adminUrl(name: string): string {
    return this.state(name).adminUrl;
  }

  /** PID of a node's running server process, or undefined. */
  pid(name: string): number | undefined {
    const proc = this.state(name).proc;
    return proc?.running() ? proc.pid : undefined;
  }
}
