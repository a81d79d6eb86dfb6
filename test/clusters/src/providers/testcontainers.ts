// The 'testcontainers' provider, for machines with a Docker (or compatible) engine.
//
// Tested here on a local engine with images built from Debian packages (scripts/images/build.sh:
// tidemark-local/postgres:15 and :19, set with TIDEMARK_TC_IMAGE_PG15 / _PG19): the whole
// conformance suite passes on them, and CI runs it. Each container is kept alive independently
// of its server (PID 1 is a shell loop), so stop/kill/start act on the server inside a
// container whose published port stays the same.
//
// MySQL-family targets (mysql97, mariadb1011) are started by testcontainers-mysql.ts; MongoDB
// (mongo/containers.ts) is the one part not run here: no MongoDB server package or image exists
// for these machines.
//
// Each node is a `postgres:<major>` container on a private network (aliases n0, n1, ...). Our
// scripts, not the image's entrypoint, run everything, so an image needs only: bash and
// coreutils, initdb/pg_ctl/pg_basebackup on PATH, and a `postgres` user (the official images
// and the local ones both have them). The primary is initdb'd into /tmp/pgdata; replicas are
// seeded with pg_basebackup -R from n0. The replication itself is src/postgres/topology.ts; this
// file supplies its servers.

import { containerMongo } from '../mongo/index.js';
import { mysqlFamilyTarget } from '../mysql/targets.js';
import * as sql from '../postgres/sql.js';
import { type PgServer, PgTopology, type Upstream } from '../postgres/topology.js';
import { PG_TARGETS, TARGETS } from '../targets.js';
import {
  type Availability,
  type Cluster,
  type ClusterNode,
  type ClusterProvider,
  DEFAULT_REPLICAS,
  type StartOptions,
} from '../types.js';
import { startMysqlContainerCluster } from './testcontainers-mysql.js';

type TC = typeof import('testcontainers');
type StartedContainer = Awaited<ReturnType<InstanceType<TC['GenericContainer']>['start']>>;

const PGDATA = '/tmp/pgdata';
const READY = 'TIDEMARK-READY';
const MAJORS: Record<string, number> = Object.fromEntries(
  PG_TARGETS.map((t) => [t, Number(TARGETS[t].series)]),
);
const LOG = '/tmp/pg.log';
const PORT = 5432;

/**
 * Image for a target: the official `postgres:<major>` unless TIDEMARK_TC_IMAGE_PG15 etc. name
 * another (pg19 has no release image yet; scripts/images/build.sh makes local ones).
 */
function imageFor(target: string): string {
  const override = process.env[`TIDEMARK_TC_IMAGE_${target.toUpperCase()}`];
  return override || `postgres:${MAJORS[target]}`;
}

const CONFIG = [
  "listen_addresses = '*'",
  'fsync = off',
  'shared_buffers = 16MB',
  'wal_level = replica',
  'max_wal_senders = 10',
  'wal_keep_size = 128MB',
  'hot_standby = on',
  'hot_standby_feedback = on',
  'wal_receiver_status_interval = 1s',
  'wal_retrieve_retry_interval = 200ms',
  "recovery_target_timeline = 'latest'",
].join('\n');

// PID 1 stays a bash loop: it keeps the container (and its port mapping) alive while the server
// is stopped, and bash reaps the orphaned postmaster after a kill so pg_ctl can start it again.
const KEEP_ALIVE = `echo ${READY}; while :; do sleep 1; done`;

const PRIMARY_SCRIPT = `set -e
initdb -D ${PGDATA} -U postgres -A trust -E UTF8 --locale=C --no-sync
printf '%s\\n' "${CONFIG}" >> ${PGDATA}/postgresql.conf
printf 'host all all all trust\\nhost replication all all trust\\n' >> ${PGDATA}/pg_hba.conf
pg_ctl -D ${PGDATA} -l ${LOG} -w start
${KEEP_ALIVE}`;

function replicaScript(name: string): string {
  return `set -e
until pg_basebackup -h n0 -U postgres -D ${PGDATA} -R -X stream -c fast -d 'application_name=${name}'; do
  rm -rf ${PGDATA}; sleep 0.5
done
pg_ctl -D ${PGDATA} -l ${LOG} -w start
${KEEP_ALIVE}`;
}

/**
 * Send a signal to every postgres process of the container (no ps/pgrep in the images), in
 * descending PID order: children before the postmaster.
 */
function signalAll(signal: string): string {
  return `for p in $(ls -d /proc/[0-9]* | sort -t/ -k3 -rn); do
  [ "$(cat $p/comm 2>/dev/null)" = postgres ] && kill -${signal} "\${p#/proc/}" 2>/dev/null || true
done`;
}
// Kill every postgres process at once (a host crash).
const KILL_ALL = signalAll('KILL');
// Wait until no postgres process is left (PID 1 reaps them).
const GONE = `for i in $(seq 100); do
  alive=0
  for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = postgres ] && alive=1; done
  [ $alive = 0 ] && exit 0
  sleep 0.1
done
echo "postgres processes still running after 10 s"; exit 1`;

/** One node's server inside its container (PID 1 is a shell loop that stays up). */
class ContainerPgServer implements PgServer {
  readonly node: ClusterNode;
  readonly sourceAddress: { readonly host: string; readonly port: number };
  /** SIGSTOPped by freeze(), not thawed since. */
  private frozen = false;

  constructor(
    name: string,
    role: ClusterNode['role'],
    readonly container: StartedContainer,
  ) {
    const host = container.getHost();
    const port = container.getMappedPort(PORT);
    // The node script has started the server already.
    this.node = {
      name,
      role,
      host,
      port,
      url: `postgres://postgres@${host}:${port}/postgres`,
      running: true,
    };
    // The other containers reach it by its network alias.
    this.sourceAddress = { host: name, port: PORT };
  }

  private async sh(script: string): Promise<void> {
    const r = await this.container.exec(['bash', '-c', script], { user: 'postgres' });
    if (r.exitCode !== 0)
      throw new Error(`${this.node.name}: ${script.split('\n')[0]} failed: ${r.output}`);
  }

  running(): boolean {
    return this.node.running;
  }

  async start(): Promise<void> {
    await this.sh(`pg_ctl -D ${PGDATA} -l ${LOG} -w start`);
    this.node.running = true;
    await sql.waitUntilAccepting(this.node.url, { timeoutMs: 60_000 });
  }

  async stop(): Promise<void> {
    if (!this.node.running) return;
    await this.thaw();
    await this.sh(`pg_ctl -D ${PGDATA} -m fast -w stop`);
  }

  async kill(): Promise<void> {
    // SIGKILL ends stopped processes too.
    await this.sh(KILL_ALL);
    this.frozen = false;
  }

  async freeze(): Promise<void> {
    if (this.frozen) return;
    // Twice: a process forked while the first pass ran is stopped by the second.
    await this.sh(`${signalAll('STOP')}\n${signalAll('STOP')}`);
    this.frozen = true;
  }

  async thaw(): Promise<void> {
    if (!this.frozen) return;
    await this.sh(signalAll('CONT'));
    this.frozen = false;
  }

  /**
   * A running standby: primary_conninfo through ALTER SYSTEM (reloadable since PostgreSQL 13),
   * empty when cut off. A stopped node follows `upstream` from its next start: standby.signal
   * and primary_conninfo in postgresql.auto.conf. A new primary needs nothing: pg_promote()
   * removed its standby.signal.
   */
  async configure(upstream: Upstream | undefined): Promise<void> {
    if (!upstream) return;
    if (this.node.running) {
      const conninfo = upstream.cut ? '' : upstream.conninfo;
      await sql.query(this.node.url, `ALTER SYSTEM SET primary_conninfo = '${conninfo}'`);
      return;
    }
    await this.sh(
      `touch ${PGDATA}/standby.signal && echo "primary_conninfo = '${upstream.conninfo}'" >> ${PGDATA}/postgresql.auto.conf`,
    );
  }

  async reload(): Promise<void> {
    await sql.query(this.node.url, 'SELECT pg_reload_conf()');
  }

  /** SIGKILL, then pg_basebackup -R from the primary (the images have it). */
  async rebuild(primary: this): Promise<void> {
    await this.kill();
    this.node.running = false;
    await this.sh(GONE);
    const p = primary.node.name;
    await this.sh(
      `rm -rf ${PGDATA} && pg_basebackup -h ${p} -U postgres -D ${PGDATA} -R -X stream -c fast -d 'application_name=${this.node.name}'`,
    );
  }

  async logSize(): Promise<number> {
    const r = await this.container.exec(['bash', '-c', `stat -c %s ${LOG} 2>/dev/null || echo 0`]);
    return Number(r.output.trim()) || 0;
  }

  async logSince(offset: number): Promise<string> {
    return (await this.container.exec(['bash', '-c', `tail -c +${offset + 1} ${LOG}`])).output;
  }

  async logContext(offset: number): Promise<string> {
    return (await this.logSince(offset)).slice(-2000);
  }

  async logTail(): Promise<string> {
    return (await this.container.exec(['bash', '-c', `tail -n 25 ${LOG}`])).output;
  }
}

export class TestcontainersProvider implements ClusterProvider {
  readonly name = 'testcontainers' as const;

  supports(target: string): boolean {
    return (
      Object.hasOwn(MAJORS, target) || mysqlFamilyTarget(target) !== undefined || target === 'mongo'
    );
  }

  async available(target: string): Promise<Availability> {
    if (!this.supports(target)) return { ok: false, reason: `unknown target '${target}'` };
    // Three mongod containers on host networking (not run here: no mongod): mongo/containers.ts.
    if (target === 'mongo') return containerMongo.available();
    try {
      const tc = await import('testcontainers');
      // Rejects within milliseconds when there is no engine.
      await tc.getContainerRuntimeClient();
    } catch (err) {
      return { ok: false, reason: `no container runtime: ${(err as Error).message}` };
    }
    return { ok: true };
  }

  async start(target: string, options: StartOptions = {}): Promise<Cluster> {
    // MySQL 9 / MariaDB 10.11 containers: testcontainers-mysql.ts.
    if (mysqlFamilyTarget(target)) return startMysqlContainerCluster(target, options);
    if (target === 'mongo') return containerMongo.start(options);
    const { GenericContainer, Network, Wait } = await import('testcontainers');
    const replicas = options.replicas ?? DEFAULT_REPLICAS;
    const image = imageFor(target);
    const network = await new Network().start();
    const servers: ContainerPgServer[] = [];
    const make = (name: string, script: string) =>
      new GenericContainer(image)
        .withNetwork(network)
        .withNetworkAliases(name)
        .withUser('postgres')
        .withEntrypoint(['bash', '-c'])
        .withCommand([script])
        .withExposedPorts(PORT)
        .withWaitStrategy(Wait.forLogMessage(READY))
        .withStartupTimeout(180_000)
        .start();
    const dispose = async () => {
      await Promise.allSettled(servers.map((s) => s.container.stop({ timeout: 0 })));
      await network.stop().catch(() => {});
    };
    try {
      servers.push(new ContainerPgServer('n0', 'primary', await make('n0', PRIMARY_SCRIPT)));
      const started = await Promise.allSettled(
        Array.from({ length: replicas }, (_, i) => make(`n${i + 1}`, replicaScript(`n${i + 1}`))),
      );
      started.forEach((r, i) => {
        if (r.status === 'fulfilled')
          servers.push(new ContainerPgServer(`n${i + 1}`, 'replica', r.value));
      });
      const failed = started.find((r) => r.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      for (const s of servers.slice(1)) {
        if (!(await sql.waitForStreaming(s.node.url, {}, 60_000)))
          throw new Error(`${s.node.name} is not streaming after 60 s\n${await s.logTail()}`);
      }
      const cluster = new PgTopology(
        target,
        servers,
        {
          matchSenderPort: false,
          readLogEvery: 5,
          replayNeedsRunningReplica: false,
          repoint: 'reload',
        },
        dispose,
      );
      await cluster.readVersion();
      return cluster;
    } catch (err) {
      await dispose();
      throw err;
    }
  }
}

export const testcontainersProvider = new TestcontainersProvider();
