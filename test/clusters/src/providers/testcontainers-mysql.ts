// MySQL/MariaDB clusters of the 'testcontainers' provider (mysql97, mariadb1011).
//
// The replication itself is src/mysql/topology.ts; this file supplies its servers.
// Tested here on a local engine with images built from Debian packages (scripts/images/build.sh:
// tidemark-local/mysql:9.7 and tidemark-local/mariadb:10.11, set with TIDEMARK_TC_IMAGE_MYSQL97 /
// _MARIADB1011): the whole conformance suite passes on them, and CI runs it. It mirrors the
// PostgreSQL containers (testcontainers.ts) and the local MySQL clusters (local/mysql.ts): the
// same option files (nodeConfig, with the bind and report addresses of a container), the same
// accounts, and all replication SQL from the flavour's dialect.
//
// Each node is a `mysql:9` / `mariadb:10.11` container on a private network (aliases n0, n1, ...)
// whose PID 1 is a shell loop, so stop/kill/start act on the server inside a container that
// stays up and keeps its published port. Our script initialises the data directory (not the
// image's entrypoint): no binary log while initialising, so every node starts with an empty
// GTID history and replicas fetch the source's whole binary log with auto-position / slave_pos.
// An image needs only: bash and coreutils, mysqld (or mariadbd and mariadb-install-db) on PATH,
// and a `mysql` user; everything is written under /tmp.

import { dialectFor, type MysqlFlavour } from '../mysql/dialect.js';
import * as sql from '../mysql/sql.js';
import { mysqlFamilyTarget } from '../mysql/targets.js';
import { type MysqlServer, MysqlTopology } from '../mysql/topology.js';
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

const PORT = 3306;
const READY = 'TIDEMARK-READY';
const DATA_DIR = '/tmp/mydata';
const CONFIG_FILE = '/tmp/my.cnf';
const LOG_FILE = '/tmp/mysqld.log';
const START_TIMEOUT_MS = 90_000;

const IMAGES: Record<MysqlFlavour, string> = { mysql: 'mysql:9', mariadb: 'mariadb:10.11' };
const SERVERS: Record<MysqlFlavour, string> = { mysql: 'mysqld', mariadb: 'mariadbd' };

/**
 * Image for a target: the official `mysql:9` / `mariadb:10.11` unless TIDEMARK_TC_IMAGE_MYSQL97 /
 * TIDEMARK_TC_IMAGE_MARIADB1011 name another (scripts/images/build.sh makes local ones).
 */
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

/** Send a signal to every server process of the container. */
function signalAll(flavour: MysqlFlavour, signal: string): string {
  return `for p in /proc/[0-9]*; do
  [ "$(cat $p/comm 2>/dev/null)" = ${SERVERS[flavour]} ] && kill -${signal} "\${p#/proc/}" 2>/dev/null || true
done`;
}

// Kill every server process at once (a host crash); PID 1 reaps it.
function killAll(flavour: MysqlFlavour): string {
  return signalAll(flavour, 'KILL');
}

function waitForExit(flavour: MysqlFlavour, seconds: number): string {
  return `${serverAlive(flavour)}
for i in $(seq ${seconds * 10}); do alive || exit 0; sleep 0.1; done
echo "server still running after ${seconds} s"; exit 1`;
}

/** One node's server inside its container (PID 1 is a shell loop that stays up). */
class ContainerMysqlServer implements MysqlServer {
  readonly node: ClusterNode;
  readonly adminUrl: string;
  readonly sourceAddress: { readonly host: string; readonly port: number };
  /** SIGSTOPped by freeze() and not thawed since. */
  private frozen = false;

  constructor(
    name: string,
    readonly container: StartedContainer,
    private readonly flavour: MysqlFlavour,
  ) {
    const host = container.getHost();
    const port = container.getMappedPort(PORT);
    this.adminUrl = `mysql://${ADMIN_USER}@${host}:${port}/`;
    // The other containers reach it by its network alias.
    this.sourceAddress = { host: name, port: PORT };
    // The node script has started the server already.
    this.node = {
      name,
      role: name === 'n0' ? 'primary' : 'replica',
      host,
      port,
      url: `mysql://${URL_USER}@${host}:${port}/${DATABASE}`,
      running: true,
    };
  }

  private async sh(script: string): Promise<void> {
    const r = await this.container.exec(['bash', '-c', script], { user: 'mysql' });
    if (r.exitCode !== 0)
      throw new Error(`${this.node.name}: ${script.split('\n')[0]} failed: ${r.output}`);
  }

  /** Wait until the server started by the node script accepts connections. */
  async accepting(): Promise<void> {
    try {
      await sql.waitUntilAccepting(this.adminUrl, { timeoutMs: START_TIMEOUT_MS });
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await this.logTail()}`);
    }
  }

  running(): boolean {
    return this.node.running;
  }

  async start(): Promise<void> {
    await this.sh(startCommand(this.flavour, this.node.role));
    this.node.running = true;
    await this.accepting();
  }

  async finishStop(asked: boolean): Promise<void> {
    // Not answering SQL: SIGTERM is the same clean shutdown.
    if (!asked) await this.sh('kill -TERM $(cat /tmp/mysqld.pid) 2>/dev/null || true');
    await this.sh(waitForExit(this.flavour, 60));
  }

  async kill(): Promise<void> {
    // SIGKILL ends a stopped (frozen) server too.
    await this.sh(killAll(this.flavour));
    await this.sh(waitForExit(this.flavour, 10));
    this.frozen = false;
  }

  async freeze(): Promise<void> {
    if (this.frozen) return;
    await this.sh(signalAll(this.flavour, 'STOP'));
    this.frozen = true;
  }

  async thaw(): Promise<void> {
    if (!this.frozen) return;
    await this.sh(signalAll(this.flavour, 'CONT'));
    this.frozen = false;
  }

  async reinitialise(serverId: number): Promise<void> {
    await this.sh(`set -e
rm -rf ${DATA_DIR}
cat > ${CONFIG_FILE} <<'TIDEMARK_EOF'
${containerConfig(this.flavour, this.node.name, serverId)}
TIDEMARK_EOF
${initialiseCommand(this.flavour)} >>${LOG_FILE} 2>&1`);
  }

  /** The server log inside the container, for error messages. */
  async logTail(): Promise<string> {
    const r = await this.container
      .exec(['bash', '-c', `tail -n 25 ${LOG_FILE}`], { user: 'mysql' })
      .catch(() => undefined);
    return `--- ${this.node.name} log (${LOG_FILE} in its container) ---\n${r?.output ?? '(no log)'}`;
  }
}

/** Start a MySQL-family cluster in containers: source n0 plus `options.replicas` GTID replicas. */
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
  const servers: ContainerMysqlServer[] = [];
  try {
    // Every node initialises on its own, so all start at once.
    const started = await Promise.allSettled(
      Array.from({ length: replicas + 1 }, (_, i) => make(`n${i}`, i + 1)),
    );
    started.forEach((r, i) => {
      if (r.status === 'fulfilled')
        servers.push(new ContainerMysqlServer(`n${i}`, r.value, want.flavour));
    });
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const cluster = new MysqlTopology(
      target,
      want.flavour,
      servers,
      { follow: 'received', verifyPause: false, attachInParallel: false },
      async () => {
        await Promise.allSettled(servers.map((s) => s.container.stop({ timeout: 0 })));
        await network.stop().catch(() => {});
      },
    );
    for (const server of servers) await server.accepting();
    await cluster.replicate();
    if (!cluster.version.startsWith(`${want.series}.`)) {
      throw new Error(
        `${image} is ${cluster.version}, target ${target} wants ${want.series}; set TIDEMARK_TC_IMAGE_${target.toUpperCase()} to an image of that series`,
      );
    }
    return cluster;
  } catch (err) {
    await Promise.allSettled(servers.map((s) => s.container.stop({ timeout: 0 })));
    await network.stop().catch(() => {});
    throw err;
  }
}
