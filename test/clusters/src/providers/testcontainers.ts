// The 'testcontainers' provider, for machines with a Docker (or compatible) engine.
//
// UNTESTED HERE: the machines this harness was written on have no container engine; only the
// fast failure of available() was exercised. The design keeps each container alive independently
// of its server (PID 1 is a shell loop), so stop/kill/start act on the server inside a container
// whose published port stays the same.
//
// MySQL-family targets (mysql97, mariadb1011) are started by testcontainers-mysql.ts.
//
// Each node is a `postgres:<major>` container on a private network (aliases n0, n1, ...). The
// primary is initdb'd by our script (not the image's entrypoint, whose PGDATA differs between
// image versions); replicas are seeded with pg_basebackup -R from n0.

import { capabilitySet, unsupportedBy } from '../capabilities.js';
import { containerMongo } from '../mongo/index.js';
import { mysqlFamilyTarget } from '../mysql/targets.js';
import * as sql from '../postgres/sql.js';
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
type StartedNetwork = Awaited<ReturnType<InstanceType<TC['Network']>['start']>>;

const PGDATA = '/tmp/pgdata';
const READY = 'TIDEMARK-READY';
const MAJORS: Record<string, number> = { pg15: 15, pg18: 18, pg19: 19 };

/** Image for a target; override with TIDEMARK_TC_IMAGE_PG15 etc. (pg19 has no release image yet). */
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
pg_ctl -D ${PGDATA} -l /tmp/pg.log -w start
${KEEP_ALIVE}`;

function replicaScript(name: string): string {
  return `set -e
until pg_basebackup -h n0 -U postgres -D ${PGDATA} -R -X stream -c fast -d 'application_name=${name}'; do
  rm -rf ${PGDATA}; sleep 0.5
done
pg_ctl -D ${PGDATA} -l /tmp/pg.log -w start
${KEEP_ALIVE}`;
}

// Kill every postgres process at once (a host crash); no ps/pgrep needed in the image.
const KILL_ALL = `for p in /proc/[0-9]*; do
  [ "$(cat $p/comm 2>/dev/null)" = postgres ] && kill -9 "\${p#/proc/}" 2>/dev/null || true
done`;

interface Member {
  node: ClusterNode;
  container: StartedContainer;
}

class ContainerPgCluster implements Cluster {
  readonly capabilities = capabilitySet('pause', 'kill', 'promote');
  readonly cutOff = unsupportedBy('the testcontainers provider', 'cut-off');
  readonly reconnect = unsupportedBy('the testcontainers provider', 'cut-off');
  readonly freeze = unsupportedBy('the testcontainers provider', 'freeze');
  readonly thaw = unsupportedBy('the testcontainers provider', 'freeze');
  readonly rejoin = unsupportedBy('the testcontainers provider', 'rejoin');
  readonly flavour = 'postgres' as const;
  private done: Promise<void> | undefined;

  constructor(
    readonly target: string,
    readonly version: string,
    private readonly members: Member[],
    private readonly network: StartedNetwork,
  ) {}

  private member(name: string): Member {
    const m = this.members.find((x) => x.node.name === name);
    if (!m) throw new Error(`no node '${name}'`);
    return m;
  }

  private async sh(m: Member, script: string): Promise<void> {
    const r = await m.container.exec(['bash', '-c', script], { user: 'postgres' });
    if (r.exitCode !== 0)
      throw new Error(`${m.node.name}: ${script.split('\n')[0]} failed: ${r.output}`);
  }

  primary(): ClusterNode {
    return this.members.find((m) => m.node.role === 'primary')!.node;
  }
  replicas(): ClusterNode[] {
    return this.nodes().filter((n) => n.role === 'replica');
  }
  nodes(): ClusterNode[] {
    return this.members.map((m) => m.node);
  }
  pauseReplay(name: string) {
    return sql.pauseReplay(this.member(name).node.url);
  }
  resumeReplay(name: string) {
    return sql.resumeReplay(this.member(name).node.url);
  }
  async stop(name: string) {
    const m = this.member(name);
    if (!m.node.running) return;
    await this.sh(m, `pg_ctl -D ${PGDATA} -m fast -w stop`);
    m.node.running = false;
  }
  async kill(name: string) {
    const m = this.member(name);
    await this.sh(m, KILL_ALL);
    m.node.running = false;
  }
  async start(name: string) {
    const m = this.member(name);
    if (m.node.running) return;
    await this.sh(m, `pg_ctl -D ${PGDATA} -l /tmp/pg.log -w start`);
    m.node.running = true;
    await sql.waitUntilAccepting(m.node.url, { timeoutMs: 60_000 });
  }
  async promote(name: string) {
    const target = this.member(name);
    if (target.node.role !== 'replica') throw new Error(`${name} is not a replica`);
    const old = this.members.find((m) => m.node.role === 'primary')!;
    if (old.node.running) await this.stop(old.node.name);
    await sql.promote(target.node.url);
    const timeline = await sql.primaryTimeline(target.node.url);
    target.node.role = 'primary';
    old.node.role = 'replica';
    const conninfo = (app: string) =>
      `host=${name} port=5432 user=postgres application_name=${app}`;
    // The old primary stays stopped, but as a standby: a later start() must not make two primaries.
    await this.sh(
      old,
      `touch ${PGDATA}/standby.signal && echo "primary_conninfo = '${conninfo(old.node.name)}'" >> ${PGDATA}/postgresql.auto.conf`,
    );
    for (const m of this.members) {
      if (m === target || m === old || !m.node.running) continue;
      await sql.query(m.node.url, `ALTER SYSTEM SET primary_conninfo = '${conninfo(m.node.name)}'`);
      await sql.query(m.node.url, 'SELECT pg_reload_conf()');
      if (!(await sql.waitForStreaming(m.node.url, { timeline }, 30_000))) {
        throw new Error(`${m.node.name} does not follow ${name} on timeline ${timeline}`);
      }
    }
  }
  async positions() {
    const running = this.nodes().filter((n) => n.running);
    const lsns = await Promise.all(running.map((n) => sql.position(n.url)));
    return Object.fromEntries(running.map((n, i) => [n.name, lsns[i]!]));
  }
  exec(name: string, text: string) {
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

export class TestcontainersProvider implements ClusterProvider {
  readonly name = 'testcontainers' as const;

  supports(target: string): boolean {
    return (
      Object.hasOwn(MAJORS, target) || mysqlFamilyTarget(target) !== undefined || target === 'mongo'
    );
  }

  async available(target: string): Promise<Availability> {
    if (!this.supports(target)) return { ok: false, reason: `unknown target '${target}'` };
    // Three mongod containers on host networking (UNTESTED HERE): mongo/containers.ts.
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
    // MySQL 9 / MariaDB 10.11 containers (also UNTESTED HERE): testcontainers-mysql.ts.
    if (mysqlFamilyTarget(target)) return startMysqlContainerCluster(target, options);
    if (target === 'mongo') return containerMongo.start(options);
    const { GenericContainer, Network, Wait } = await import('testcontainers');
    const replicas = options.replicas ?? DEFAULT_REPLICAS;
    const image = imageFor(target);
    const network = await new Network().start();
    const members: Member[] = [];
    const make = (name: string, script: string) =>
      new GenericContainer(image)
        .withNetwork(network)
        .withNetworkAliases(name)
        .withUser('postgres')
        .withEntrypoint(['bash', '-c'])
        .withCommand([script])
        .withExposedPorts(5432)
        .withWaitStrategy(Wait.forLogMessage(READY))
        .withStartupTimeout(180_000)
        .start();
    const member = (
      name: string,
      role: ClusterNode['role'],
      container: StartedContainer,
    ): Member => {
      const host = container.getHost();
      const port = container.getMappedPort(5432);
      return {
        container,
        node: {
          name,
          role,
          host,
          port,
          url: `postgres://postgres@${host}:${port}/postgres`,
          running: true,
        },
      };
    };
    try {
      members.push(member('n0', 'primary', await make('n0', PRIMARY_SCRIPT)));
      const started = await Promise.allSettled(
        Array.from({ length: replicas }, (_, i) => make(`n${i + 1}`, replicaScript(`n${i + 1}`))),
      );
      started.forEach((r, i) => {
        if (r.status === 'fulfilled') members.push(member(`n${i + 1}`, 'replica', r.value));
      });
      const failed = started.find((r) => r.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      for (const m of members.slice(1)) {
        if (!(await sql.waitForStreaming(m.node.url, {}, 60_000)))
          throw new Error(`${m.node.name} is not streaming`);
      }
      const version = await sql.serverVersion(members[0]!.node.url);
      return new ContainerPgCluster(target, version, members, network);
    } catch (err) {
      await Promise.allSettled(members.map((m) => m.container.stop({ timeout: 0 })));
      await network.stop().catch(() => {});
      throw err;
    }
  }
}

export const testcontainersProvider = new TestcontainersProvider();
