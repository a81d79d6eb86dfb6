// A MySQL or MariaDB source plus GTID replicas as local child processes: the servers of
// src/mysql/topology.ts (which does the replication) as processes of this machine.
//
// Every node's data directory is a copy of one initialised template (see mysql-template.ts);
// all nodes start at once, the source creates the `test` database, and each replica is pointed
// at the source with GTID auto-positioning, so it fetches the source's whole binary log. Nodes
// run as the `mysql` user with --defaults-file (no option file of the machine is read: a MariaDB
// already running on this machine is never touched).

import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dialectFor } from '../../mysql/dialect.js';
import * as sql from '../../mysql/sql.js';
import { type MysqlServer, MysqlTopology } from '../../mysql/topology.js';
import { freePorts } from '../../ports.js';
import {
  type FrozenTree,
  freezeTree,
  killTree,
  type ServerProcess,
  stopServer,
} from '../../process.js';
import type { SystemUser } from '../../runtime.js';
import { copyTree, createRunDir, type RunDir, reapStaleRunDirs } from '../../tempdir.js';
import type { ClusterNode } from '../../types.js';
import { ADMIN_USER, DATABASE, HOST, nodeConfig, URL_USER } from './mysql-config.js';
import type { MysqlBinaries } from './mysql-targets.js';
import { dataTemplate } from './mysql-template.js';

export const RUN_DIR_PREFIX = 'tidemark-my-';
const SERVER_USER = 'mysql';
const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 60_000;

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

/** Resident memory of a process in bytes (Linux), or undefined. */
export function residentBytes(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** One node's mysqld / mariadbd, a child process of the test process. */
class LocalMysqlServer implements MysqlServer {
  readonly node: ClusterNode;
  readonly adminUrl: string;
  readonly sourceAddress: { readonly host: string; readonly port: number };
  readonly dataHost: string;
  proc: ServerProcess | undefined;
  private readonly configInner: string;
  private readonly logHost: string;
  /** Stopped with SIGSTOP by freeze(). */
  private frozen: FrozenTree | undefined;

  constructor(
    name: string,
    port: number,
    private serverId: number,
    private readonly bins: MysqlBinaries,
    private readonly user: SystemUser,
    private readonly runDir: RunDir,
  ) {
    this.node = {
      name,
      role: name === 'n0' ? 'primary' : 'replica',
      host: HOST,
      port,
      url: `mysql://${URL_USER}@${HOST}:${port}/${DATABASE}`,
      running: false,
    };
    this.adminUrl = `mysql://${ADMIN_USER}@${HOST}:${port}/`;
    this.sourceAddress = { host: HOST, port };
    this.dataHost = join(runDir.host, name);
    this.configInner = join(runDir.inner, `${name}.cnf`);
    this.logHost = join(runDir.host, `${name}.log`);
  }

  /** A copy of the template data directory and this node's option file. */
  async prepare(): Promise<void> {
    const template = await dataTemplate(this.bins, this.user);
    await copyTree(template.dataHost, this.dataHost);
    // Each node generates its own server_uuid on first start.
    await rm(join(this.dataHost, 'auto.cnf'), { force: true });
    const inner = this.runDir.inner;
    const name = this.node.name;
    const config = nodeConfig(
      this.bins.flavour,
      { serverId: this.serverId, port: this.node.port },
      {
        dataDir: join(inner, name),
        socket: join(inner, `${name}.sock`),
        pidFile: join(inner, `${name}.pid`),
      },
    );
    await writeFile(this.bins.runtime.hostPath(this.configInner), config);
  }

  running(): boolean {
    return this.proc?.running() ?? false;
  }

  async start(): Promise<void> {
    const args = [`--defaults-file=${this.configInner}`];
    // Replicas refuse writes from every client from their first moment; appliers are exempt.
    if (this.node.role === 'replica') args.push(...dialectFor(this.bins.flavour).readOnlyOptions);
    const proc = this.bins.runtime.spawn(this.bins.server, args, this.logHost, {
      user: this.user,
      emergencySignal: 'SIGKILL',
    });
    this.proc = proc;
    this.runDir.recordPid(proc.pid);
    this.node.running = true;
    proc.exited.then(() => {
      if (this.proc === proc) this.node.running = false;
    });
    await sql.waitUntilAccepting(this.adminUrl, {
      timeoutMs: START_TIMEOUT_MS,
      alive: () => proc.running(),
      context: () => this.context(),
    });
  }

  async finishStop(asked: boolean): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    if (asked) await exitedWithin(proc, STOP_TIMEOUT_MS);
    await stopServer(proc, 'SIGTERM', STOP_TIMEOUT_MS);
  }

  async kill(): Promise<void> {
    const proc = this.proc;
    await this.thaw();
    if (proc?.running()) {
      await killTree(proc.pid);
      // The child is unref'd: a bare script with nothing else pending would otherwise exit
      // before Node reports the exit (the timer keeps it alive until then).
      await exitedWithin(proc, 10_000);
    }
  }

  async freeze(): Promise<void> {
    if (this.frozen || !this.proc) return;
    this.frozen = freezeTree(this.proc.pid);
  }

  async thaw(): Promise<void> {
    this.frozen?.thaw();
    this.frozen = undefined;
  }

  async reinitialise(serverId: number): Promise<void> {
    await rm(this.dataHost, { recursive: true, force: true });
    this.serverId = serverId;
    await this.prepare();
  }

  /** SIGKILL the server (teardown: the data is thrown away) and wait for it. */
  async dispose(): Promise<void> {
    await this.thaw();
    if (this.proc) await stopServer(this.proc, 'SIGKILL', 10_000);
    this.node.running = false;
  }

  private context(): string {
    return `--- ${this.node.name} log (${this.logHost}) ---\n${tail(this.logHost)}`;
  }

  async logTail(): Promise<string> {
    return this.context();
  }
}

/** A local MySQL/MariaDB cluster; exported for tests that need its directory, PIDs or admin account. */
export class LocalMysqlCluster extends MysqlTopology {
  /** Milliseconds spent making the template data directory for this cluster (0 if reused). */
  templateMs = 0;

  private constructor(
    bins: MysqlBinaries,
    private readonly runDir: RunDir,
    private readonly servers: readonly LocalMysqlServer[],
  ) {
    super(
      bins.target,
      bins.flavour,
      servers,
      { follow: 'settled', verifyPause: true, attachInParallel: true },
      async () => {
        await Promise.all(servers.map((s) => s.dispose()));
        await runDir.remove();
      },
    );
  }

  static async start(bins: MysqlBinaries, replicas: number): Promise<LocalMysqlCluster> {
    if (!Number.isInteger(replicas) || replicas < 0)
      throw new Error(`replicas must be an integer >= 0, got ${replicas}`);
    const runtime = bins.runtime;
    // Data is thrown away: SIGKILL is the right way to stop what a crashed test process left.
    await reapStaleRunDirs(runtime, RUN_DIR_PREFIX, 'SIGKILL');
    const user = await runtime.ensureUser(SERVER_USER);
    const runDir = await createRunDir(runtime, RUN_DIR_PREFIX, user);
    let cluster: LocalMysqlCluster | undefined;
    try {
      const ports = await freePorts(replicas + 1, HOST);
      const servers = ports.map(
        (port, i) => new LocalMysqlServer(`n${i}`, port, i + 1, bins, user, runDir),
      );
      cluster = new LocalMysqlCluster(bins, runDir, servers);
      cluster.templateMs = (await dataTemplate(bins, user)).initMs;
      for (const server of servers) await server.prepare();
      await cluster.launchAll();
      await cluster.replicate();
      return cluster;
    } catch (err) {
      if (cluster) await cluster.teardown().catch(() => {});
      else await runDir.remove().catch(() => {});
      throw err;
    }
  }

  /** Where the data directories, option files and logs are (for debugging a failed test). */
  get directory(): string {
    return this.runDir.host;
  }

  /** The harness's own account on a node (it may toggle read_only; root on MariaDB may not). */
  adminUrl(name: string): string {
    return this.table.get(name).adminUrl;
  }

  /** PID of a node's running server process, or undefined. */
  pid(name: string): number | undefined {
    const node = this.table.get(name).node;
    const proc = this.servers.find((s) => s.node === node)?.proc;
    return proc?.running() ? proc.pid : undefined;
  }
}
