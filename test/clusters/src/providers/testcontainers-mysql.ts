// MySQL/MariaDB clusters of the 'testcontainers' provider (mysql97, mariadb1011).
//
// UNTESTED HERE: the machines this harness was written on have no container engine; only the
// fast failure of available() was exercised. It mirrors the PostgreSQL containers
// (testcontainers.ts) and the local MySQL clusters (local/mysql.ts): the same option files
// (nodeConfig, with the bind and report addresses of a container), the same accounts, and all
// replication SQL from the flavour's dialect.
//
// Each node is a `mysql:9` / `mariadb:10.11` container on a private network (aliases n0, n1, ...)
// whose PID 1 is a shell loop, so stop/kill/start act on the server inside a container that
// stays up and keeps its published port. Our script initialises the data directory (not the
// image's entrypoint): no binary log while initialising, so every node starts with an empty
// GTID history and replicas fetch the source's whole binary log with auto-position / slave_pos.

import { capabilitySet, unsupportedBy } from '../capabilities.js';
import { dialectFor, type MysqlFlavour, type ReplicationDialect } from '../mysql/dialect.js';
import * as sql from '../mysql/sql.js';
import { mysqlFamilyTarget } from '../mysql/targets.js';
import { type Cluster, type ClusterNode, DEFAULT_REPLICAS, type StartOptions } from '../types.js';
import {
  ADMIN_USER,
  commonSettings,
  DATABASE,
  nodeConfig,
  URL_USER,
} from './local/mysql-config.js';

type TC = typeof import('testcontainers');
type StartedContainer = Awaited<ReturnType<InstanceType<TC['GenericContainer']>['start']>>;
type StartedNetwork = Awaited<ReturnType<InstanceType<TC['Network']>['start']>>;

const PORT = 3306;
const READY = 'TIDEMARK-READY';
const DATA_DIR = '/tmp/mydata';
const CONFIG_FILE = '/tmp/my.cnf';
const LOG_FILE = '/tmp/mysqld.log';
const START_TIMEOUT_MS = 90_000;
const FOLLOW_TIMEOUT_MS = 30_000;
const CATCH_UP_TIMEOUT_MS = 60_000;
// How long a clean stop of the primary waits for replicas to receive what it committed.
const HAND_OVER_MS = 5_000;

const IMAGES: Record<MysqlFlavour, string> = { mysql: 'mysql:9', mariadb: 'mariadb:10.11' };
const SERVERS: Record<MysqlFlavour, string> = { mysql: 'mysqld', mariadb: 'mariadbd' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Image for a target; override with TIDEMARK_TC_IMAGE_MYSQL97 / TIDEMARK_TC_IMAGE_MARIADB1011. */
function imageFor(target: string, flavour: MysqlFlavour): string {
  return process.env[`TIDEMARK_TC_IMAGE_${target.toUpperCase()}`] || IMAGES[flavour];
}

/** Replace one `key=value` line of an option file; throws if the line is not there. */
function setOption(config: string, key: string, value: string): string {
  const line = new RegExp(`^${key}=.*$`, 'm');
  if (!line.test(config)) throw new Error(`option file has no ${key} line to replace`);
  return config.replace(line, `${key}=${value}`);
}

/** The local option file, listening on every interface and reporting the network alias. */
function containerConfig(flavour: MysqlFlavour, name: string, serverId: number): string {
  const local = nodeConfig(
    flavour,
    { serverId, port: PORT },
    { dataDir: DATA_DIR, socket: '/tmp/mysqld.sock', pidFile: '/tmp/mysqld.pid' },
  );
  return setOption(setOption(local, 'bind-address', '0.0.0.0'), 'report-host', name);
}

/**
 * First-start SQL: as the local clusters' (mysql-config.ts initSql), for connections from any
 * host of the network ('%') instead of 127.0.0.1. On MariaDB root loses READ_ONLY ADMIN so that
 * read_only stops it on replicas; the harness uses the admin account for what it does itself.
 */
function initSql(flavour: MysqlFlavour): string {
  const account = (user: string) => `CREATE USER '${user}'@'%' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO '${user}'@'%' WITH GRANT OPTION;
`;
  if (flavour === 'mysql') return account(URL_USER) + account(ADMIN_USER);
  // mariadb-install-db runs this in bootstrap mode: grant tables load at FLUSH PRIVILEGES.
  return `FLUSH PRIVILEGES;
${account(URL_USER)}${account(ADMIN_USER)}REVOKE READ_ONLY ADMIN ON *.* FROM '${URL_USER}'@'%';
`;
}

function initialiseCommand(flavour: MysqlFlavour): string {
  // The template settings only (no gtid-mode, no log-bin), as for the local template.
  const options = '--defaults-file=/tmp/init.cnf';
  return flavour === 'mysql'
    ? `mysqld ${options} --initialize-insecure --datadir=${DATA_DIR} --init-file=/tmp/init.sql --skip-log-bin`
    : `mariadb-install-db ${options} --datadir=${DATA_DIR} --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve --extra-file=/tmp/init.sql`;
}

/** Start the server in the background; every descriptor redirected so `exec` returns at once. */
function startCommand(flavour: MysqlFlavour, role: ClusterNode['role']): string {
  // Replicas refuse writes from every client from their first moment; appliers are exempt.
  const args = role === 'replica' ? dialectFor(flavour).readOnlyOptions.join(' ') : '';
  return `nohup ${SERVERS[flavour]} --defaults-file=${CONFIG_FILE} ${args} </dev/null >>${LOG_FILE} 2>&1 &`;
}

/** PID 1 of a node: writes its files, initialises, starts the server, then stays alive. */
function nodeScript(flavour: MysqlFlavour, name: string, serverId: number): string {
  const init = `[mysqld]\n${setOption(commonSettings(flavour).trim(), 'bind-address', '0.0.0.0')}`;
  return `set -e
cat > /tmp/init.cnf <<'TIDEMARK_EOF'
${init}
TIDEMARK_EOF
cat > ${CONFIG_FILE} <<'TIDEMARK_EOF'
${containerConfig(flavour, name, serverId)}
TIDEMARK_EOF
cat > /tmp/init.sql <<'TIDEMARK_EOF'
${initSql(flavour)}
TIDEMARK_EOF
${initialiseCommand(flavour)} >>${LOG_FILE} 2>&1
${startCommand(flavour, serverId === 1 ? 'primary' : 'replica')}
echo ${READY}; while :; do sleep 1; done`;
}

/** Shell test: is a server process alive in this container? (no ps/pgrep in the images) */
function serverAlive(flavour: MysqlFlavour): string {
  return `alive() { for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = ${SERVERS[flavour]} ] && return 0; done; return 1; }`;
}

// Kill every server process at once (a host crash); PID 1 reaps it.
function killAll(flavour: MysqlFlavour): string {
  return `for p in /proc/[0-9]*; do
  [ "$(cat $p/comm 2>/dev/null)" = ${SERVERS[flavour]} ] && kill -9 "\${p#/proc/}" 2>/dev/null || true
done`;
}

function waitForExit(flavour: MysqlFlavour, seconds: number): string {
  return `${serverAlive(flavour)}
for i in $(seq ${seconds * 10}); do alive || exit 0; sleep 0.1; done
echo "server still running after ${seconds} s"; exit 1`;
}

interface Member {
  readonly node: ClusterNode;
  readonly container: StartedContainer;
  /** The harness's own account on this node (see ADMIN_USER). */
  readonly adminUrl: string;
  /** Applier stopped by pauseReplay() and not resumed since. */
  paused: boolean;
  /** Has written its own binary log events as a primary since it last followed a source. */
  wrote: boolean;
}

class ContainerMysqlCluster implements Cluster {
  readonly capabilities = capabilitySet('pause', 'kill', 'promote');
  readonly cutOff = unsupportedBy('the testcontainers provider', 'cut-off');
  readonly reconnect = unsupportedBy('the testcontainers provider', 'cut-off');
  readonly freeze = unsupportedBy('the testcontainers provider', 'freeze');
  readonly thaw = unsupportedBy('the testcontainers provider', 'freeze');
  readonly rejoin = unsupportedBy('the testcontainers provider', 'rejoin');
  private readonly dialect: ReplicationDialect;
  private done: Promise<void> | undefined;
  version = '';

  constructor(
    readonly target: string,
    readonly flavour: MysqlFlavour,
    private readonly members: Member[],
    private readonly network: StartedNetwork,
  ) {
    this.dialect = dialectFor(flavour);
  }

  private member(name: string): Member {
    const m = this.members.find((x) => x.node.name === name);
    if (!m)
      throw new Error(
        `no node '${name}' (nodes: ${this.members.map((x) => x.node.name).join(', ')})`,
      );
    return m;
  }

  private currentPrimary(): Member {
    const m = this.members.find((x) => x.node.role === 'primary');
    if (!m) throw new Error('cluster has no primary');
    return m;
  }

  private runningReplica(name: string): Member {
    const m = this.member(name);
    if (m.node.role !== 'replica') throw new Error(`${name} is not a replica`);
    if (!m.node.running) throw new Error(`${name} is not running`);
    return m;
  }

  private async sh(m: Member, script: string): Promise<void> {
    const r = await m.container.exec(['bash', '-c', script], { user: 'mysql' });
    if (r.exitCode !== 0)
      throw new Error(`${m.node.name}: ${script.split('\n')[0]} failed: ${r.output}`);
  }

  /** The server log inside the container, for error messages. */
  private async logTail(m: Member): Promise<string> {
    const r = await m.container
      .exec(['bash', '-c', `tail -n 25 ${LOG_FILE}`], { user: 'mysql' })
      .catch(() => undefined);
    return `--- ${m.node.name} log (${LOG_FILE} in its container) ---\n${r?.output ?? '(no log)'}`;
  }

  /** Used by the provider once every container is up: database, replication, version. */
  async build(): Promise<void> {
    for (const m of this.members) {
      await sql.waitUntilAccepting(m.adminUrl, { timeoutMs: START_TIMEOUT_MS });
    }
    const primary = this.currentPrimary();
    await sql.query(primary.adminUrl, `CREATE DATABASE IF NOT EXISTS ${DATABASE}`);
    for (const m of this.members) if (m !== primary) await this.attach(m);
    // Resolve only once every replica has the `test` database its URL names.
    const written = await this.dialect.executed(primary.adminUrl);
    for (const m of this.members) {
      if (m === primary) continue;
      if (!(await this.dialect.waitApplied(m.adminUrl, written, CATCH_UP_TIMEOUT_MS)))
        throw new Error(
          `${m.node.name} did not apply ${written} from n0\n${await this.logTail(m)}`,
        );
    }
    this.version = await sql.scalar(primary.adminUrl, 'SELECT VERSION() AS v');
  }

  /**
   * Point a running replica at the current primary (by network alias) and, if the primary
   * runs, wait until it has received everything the primary had. A replica holding
   * transactions the primary never had is left read-only and not replicating, and this throws.
   */
  private async attach(m: Member): Promise<void> {
    const primary = this.currentPrimary();
    if (primary.node.running) {
      const extra = await this.dialect.lacking(
        primary.adminUrl,
        await this.dialect.executed(m.adminUrl),
      );
      if (extra !== '')
        throw new Error(
          `${m.node.name}'s history diverged from ${primary.node.name}'s (it has ${extra}); it runs, read-only, but does not replicate`,
        );
    }
    await this.dialect.follow(
      m.adminUrl,
      { host: primary.node.name, port: PORT, user: URL_USER },
      { applierStopped: m.paused, wasPrimary: m.wrote },
    );
    m.wrote = false;
    if (!primary.node.running) return;
    const written = await this.dialect.executed(primary.adminUrl);
    const deadline = Date.now() + FOLLOW_TIMEOUT_MS;
    let last = 'no status yet';
    while (Date.now() < deadline) {
      const status = await this.dialect.status(m.adminUrl).catch(() => undefined);
      if (status?.receiver === 'No' && status.receiverErrno !== 0) {
        throw new Error(
          `${m.node.name}'s receiver stopped with error ${status.receiverErrno}: ${status.receiverError}`,
        );
      }
      if (status?.receiver === 'Yes' && (await this.dialect.hasReceived(m.adminUrl, written)))
        return;
      last = status ? `receiver ${status.receiver}` : 'not configured as a replica';
      await sleep(50);
    }
    throw new Error(
      `${m.node.name} does not follow ${primary.node.name} after ${FOLLOW_TIMEOUT_MS} ms (${last})\n${await this.logTail(m)}`,
    );
  }

  primary(): ClusterNode {
    return this.currentPrimary().node;
  }
  replicas(): ClusterNode[] {
    return this.nodes().filter((n) => n.role === 'replica');
  }
  nodes(): ClusterNode[] {
    return this.members.map((m) => m.node);
  }

  /** Stop the applier (SQL thread) only: the receiver keeps fetching into the relay log. */
  async pauseReplay(name: string): Promise<void> {
    const m = this.runningReplica(name);
    await this.dialect.stopApplier(m.adminUrl);
    m.paused = true;
  }
  async resumeReplay(name: string): Promise<void> {
    const m = this.runningReplica(name);
    await this.dialect.startApplier(m.adminUrl);
    m.paused = false;
  }

  /**
   * Clean shutdown. As in local/mysql.ts: followers of a primary first receive what it
   * committed, their receivers pause for the shutdown (MySQL's binlog senders otherwise delay
   * it by seconds), the senders are killed and SHUTDOWN sent; the receivers resume afterwards.
   */
  async stop(name: string): Promise<void> {
    const m = this.member(name);
    if (!m.node.running) return;
    const followers =
      m.node.role === 'primary'
        ? this.members.filter((f) => f !== m && f.node.role === 'replica' && f.node.running)
        : [];
    await this.handOver(m, followers);
    await Promise.all(followers.map((f) => this.dialect.stopReceiver(f.adminUrl).catch(() => {})));
    try {
      try {
        const threads = await this.dialect.senderThreads(m.adminUrl);
        await sql.query(m.adminUrl, [...threads.map((id) => `KILL ${id}`), 'SHUTDOWN'].join(';'));
      } catch {
        // Not answering SQL: SIGTERM is the same clean shutdown.
        await this.sh(m, `kill -TERM $(cat /tmp/mysqld.pid) 2>/dev/null || true`);
      }
      await this.sh(m, waitForExit(this.flavour, 60));
    } finally {
      await Promise.all(
        followers.map((f) => this.dialect.startReceiver(f.adminUrl).catch(() => {})),
      );
    }
    m.node.running = false;
  }

  private async handOver(source: Member, followers: readonly Member[]): Promise<void> {
    if (followers.length === 0) return;
    const written = await this.dialect.executed(source.adminUrl).catch(() => undefined);
    if (written === undefined) return;
    const deadline = Date.now() + HAND_OVER_MS;
    await Promise.all(
      followers.map(async (f) => {
        while (Date.now() < deadline) {
          if (await this.dialect.hasReceived(f.adminUrl, written).catch(() => true)) return;
          await sleep(20);
        }
      }),
    );
  }

  /** SIGKILL the server inside its container: a crash. */
  async kill(name: string): Promise<void> {
    const m = this.member(name);
    await this.sh(m, killAll(this.flavour));
    await this.sh(m, waitForExit(this.flavour, 10));
    m.node.running = false;
  }

  /** Start a stopped or killed node; a replica is pointed at the current primary again. */
  async start(name: string): Promise<void> {
    const m = this.member(name);
    if (m.node.running) return;
    await this.sh(m, startCommand(this.flavour, m.node.role));
    m.node.running = true;
    m.paused = false;
    if (m.node.role === 'primary') m.wrote = true;
    try {
      await sql.waitUntilAccepting(m.adminUrl, { timeoutMs: START_TIMEOUT_MS });
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await this.logTail(m)}`);
    }
    if (m.node.role === 'replica') await this.attach(m);
  }

  /**
   * As in local/mysql.ts: a running old primary first gets everything it committed to the
   * target, then is stopped and left stopped as a replica of the new primary. The target applies
   * all it received, forgets its source and accepts writes; the other running replicas are
   * re-pointed at it and keep their pause state.
   */
  async promote(name: string): Promise<void> {
    const target = this.runningReplica(name);
    const old = this.currentPrimary();
    const d = this.dialect;
    if (old.node.running) {
      const written = await d.executed(old.adminUrl);
      const deadline = Date.now() + FOLLOW_TIMEOUT_MS;
      while (!(await d.hasReceived(target.adminUrl, written))) {
        if (Date.now() > deadline)
          throw new Error(
            `not promoting ${name}: it has not received everything ${old.node.name} committed (${written})`,
          );
        await sleep(20);
      }
      await this.stop(old.node.name);
    }
    // Its relay log is dropped by the reset in detach(): apply everything received first.
    await d.stopReceiver(target.adminUrl);
    const status = await d.status(target.adminUrl);
    if (status && !status.applier) await d.startApplier(target.adminUrl);
    const received = status?.received ?? '';
    if (!(await d.waitApplied(target.adminUrl, received, CATCH_UP_TIMEOUT_MS)))
      throw new Error(`not promoting ${name}: it did not apply what it received (${received})`);
    await d.detach(target.adminUrl);
    target.paused = false;
    target.wrote = true;
    target.node.role = 'primary';
    old.node.role = 'replica';
    const failures: string[] = [];
    for (const m of this.members) {
      if (m === target || m === old || m.node.role !== 'replica' || !m.node.running) continue;
      await this.attach(m).catch((err: Error) => failures.push(err.message));
    }
    if (failures.length > 0)
      throw new Error(
        `promoted ${name}, but some replicas do not follow it:\n${failures.join('\n')}`,
      );
  }

  async positions(): Promise<Record<string, string>> {
    const running = this.members.filter((m) => m.node.running);
    const texts = await Promise.all(
      running.map((m) => this.dialect.position(m.adminUrl, m.node.role)),
    );
    return Object.fromEntries(running.map((m, i) => [m.node.name, texts[i]!]));
  }

  /** Run SQL as root on the node's `test` database; rows of the last statement. */
  exec(name: string, text: string): Promise<unknown[]> {
    return sql.query(this.member(name).node.url, text);
  }

  teardown(): Promise<void> {
    this.done ??= (async () => {
      await Promise.allSettled(this.members.map((m) => m.container.stop({ timeout: 0 })));
      await this.network.stop().catch(() => {});
      for (const m of this.members) m.node.running = false;
    })();
    return this.done;
  }
}

/**
 * Start a MySQL-family cluster in containers: source n0 plus `options.replicas` GTID replicas.
 * UNTESTED HERE (no container engine on the machines it was written on).
 */
export async function startMysqlContainerCluster(
  target: string,
  options: StartOptions = {},
): Promise<Cluster> {
  const want = mysqlFamilyTarget(target);
  if (!want) throw new Error(`testcontainers provider: '${target}' is not a MySQL-family target`);
  const replicas = options.replicas ?? DEFAULT_REPLICAS;
  if (!Number.isInteger(replicas) || replicas < 0)
    throw new Error(`replicas must be an integer >= 0, got ${replicas}`);
  const { GenericContainer, Network, Wait } = await import('testcontainers');
  const image = imageFor(target, want.flavour);
  const network = await new Network().start();
  const make = (name: string, serverId: number) =>
    new GenericContainer(image)
      .withNetwork(network)
      .withNetworkAliases(name)
      .withUser('mysql')
      .withEntrypoint(['bash', '-c'])
      .withCommand([nodeScript(want.flavour, name, serverId)])
      .withExposedPorts(PORT)
      .withWaitStrategy(Wait.forLogMessage(READY))
      .withStartupTimeout(180_000)
      .start();
  const members: Member[] = [];
  try {
    // Every node initialises on its own, so all start at once.
    const started = await Promise.allSettled(
      Array.from({ length: replicas + 1 }, (_, i) => make(`n${i}`, i + 1)),
    );
    started.forEach((r, i) => {
      if (r.status !== 'fulfilled') return;
      const host = r.value.getHost();
      const port = r.value.getMappedPort(PORT);
      members.push({
        container: r.value,
        adminUrl: `mysql://${ADMIN_USER}@${host}:${port}/`,
        paused: false,
        wrote: i === 0,
        node: {
          name: `n${i}`,
          role: i === 0 ? 'primary' : 'replica',
          host,
          port,
          url: `mysql://${URL_USER}@${host}:${port}/${DATABASE}`,
          running: true,
        },
      });
    });
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const cluster = new ContainerMysqlCluster(target, want.flavour, members, network);
    await cluster.build();
    if (!cluster.version.startsWith(`${want.series}.`)) {
      throw new Error(
        `${image} is ${cluster.version}, target ${target} wants ${want.series}; set TIDEMARK_TC_IMAGE_${target.toUpperCase()} to an image of that series`,
      );
    }
    return cluster;
  } catch (err) {
    await Promise.allSettled(members.map((m) => m.container.stop({ timeout: 0 })));
    await network.stop().catch(() => {});
    throw err;
  }
}
