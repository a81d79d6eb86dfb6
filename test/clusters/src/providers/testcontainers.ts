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
// seeded with pg_basebackup -R from n0.

import { capabilitySet } from '../capabilities.js';
import { containerMongo } from '../mongo/index.js';
import { mysqlFamilyTarget } from '../mysql/targets.js';
import { NodeTable } from '../node-table.js';
import * as sql from '../postgres/sql.js';
import { PG_TARGETS, TARGETS } from '../targets.js';
import {
  ALL_CAPABILITIES,
  type Availability,
  type Cluster,
  type ClusterNode,
  type ClusterProvider,
  DEFAULT_REPLICAS,
  type PromoteOptions,
  type StartOptions,
} from '../types.js';
import { startMysqlContainerCluster } from './testcontainers-mysql.js';

type TC = typeof import('testcontainers');
type StartedContainer = Awaited<ReturnType<InstanceType<TC['GenericContainer']>['start']>>;
type StartedNetwork = Awaited<ReturnType<InstanceType<TC['Network']>['start']>>;

const PGDATA = '/tmp/pgdata';
const READY = 'TIDEMARK-READY';
const MAJORS: Record<string, number> = Object.fromEntries(
  PG_TARGETS.map((t) => [t, Number(TARGETS[t].series)]),
);
const LOG = '/tmp/pg.log';
const STREAMING_TIMEOUT_MS = 30_000;
// What a standby logs when the primary's new timeline forked off before its own position.
const DIVERGED =
  /forked off current database system timeline|is not a child of this server's history/;

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

interface Member {
  node: ClusterNode;
  container: StartedContainer;
  /** Without primary_conninfo since cutOff(), not reconnected since. */
  cut?: boolean;
  /** SIGSTOPped by freeze(), not thawed since. */
  frozen?: boolean;
  /** The node its primary_conninfo names (replicas; undefined: the first primary, n0). */
  upstream?: string | undefined;
}

class ContainerPgCluster implements Cluster {
  readonly capabilities = capabilitySet(...ALL_CAPABILITIES);
  readonly flavour = 'postgres' as const;
  private done: Promise<void> | undefined;
  private readonly table: NodeTable<Member>;

  constructor(
    readonly target: string,
    readonly version: string,
    members: Member[],
    private readonly network: StartedNetwork,
  ) {
    this.table = new NodeTable(target, members);
  }

  private async sh(m: Member, script: string): Promise<void> {
    const r = await m.container.exec(['bash', '-c', script], { user: 'postgres' });
    if (r.exitCode !== 0)
      throw new Error(`${m.node.name}: ${script.split('\n')[0]} failed: ${r.output}`);
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
  pauseReplay(name: string) {
    return sql.pauseReplay(this.table.get(name).node.url);
  }
  resumeReplay(name: string) {
    return sql.resumeReplay(this.table.get(name).node.url);
  }
  async stop(name: string) {
    const m = this.table.get(name);
    if (!m.node.running) return;
    await this.thaw(name);
    await this.sh(m, `pg_ctl -D ${PGDATA} -m fast -w stop`);
    m.node.running = false;
  }
  async kill(name: string) {
    const m = this.table.get(name);
    // SIGKILL ends stopped processes too.
    await this.sh(m, KILL_ALL);
    m.frozen = false;
    m.node.running = false;
  }
  /** Start a stopped or killed node; a replica must also stream the current primary's timeline. */
  async start(name: string) {
    const m = this.table.get(name);
    if (m.node.running) return;
    const logOffset = await this.logSize(m);
    await this.sh(m, `pg_ctl -D ${PGDATA} -l ${LOG} -w start`);
    m.node.running = true;
    await sql.waitUntilAccepting(m.node.url, { timeoutMs: 60_000 });
    // A cut-off replica stays cut, and one left on the old history at a promotion stays there:
    // neither follows the current primary.
    const primary = this.table.primary();
    if (
      m.node.role === 'replica' &&
      primary.node.running &&
      !m.cut &&
      (m.upstream ?? 'n0') === primary.node.name
    )
      await this.waitUntilFollowing(m, primary, logOffset);
  }

  private async logSize(m: Member): Promise<number> {
    const r = await m.container.exec(['bash', '-c', `stat -c %s ${LOG} 2>/dev/null || echo 0`]);
    return Number(r.output.trim()) || 0;
  }

  /**
   * As the local clusters: wait until a replica streams the primary's current timeline; fail at
   * once when its log says that timeline forked off before the replica's own position (it has
   * WAL the primary never had), and after STREAMING_TIMEOUT_MS otherwise.
   */
  private async waitUntilFollowing(m: Member, primary: Member, logOffset: number): Promise<void> {
    const timeline = await sql.primaryTimeline(primary.node.url);
    const deadline = Date.now() + STREAMING_TIMEOUT_MS;
    for (let i = 0; ; i++) {
      if (await sql.waitForStreaming(m.node.url, { timeline }, 0)) return;
      const log =
        i % 5 === 4 || Date.now() > deadline
          ? (await m.container.exec(['bash', '-c', `tail -c +${logOffset + 1} ${LOG}`])).output
          : '';
      if (DIVERGED.test(log))
        throw new Error(
          `${m.node.name}'s history diverged from ${primary.node.name}'s (it has WAL past the point where ${primary.node.name}'s timeline forked off, e.g. writes lost in a failover); it runs, but cannot replicate from ${primary.node.name} without being rebuilt\n${log.slice(-2000)}`,
        );
      if (Date.now() > deadline)
        throw new Error(
          `${m.node.name} accepts connections but does not stream ${primary.node.name}'s timeline ${timeline} after ${STREAMING_TIMEOUT_MS} ms\n${log.slice(-2000)}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  /**
   * As the local clusters: stop the old primary cleanly (it streams everything up to its
   * shutdown checkpoint), promote, leave the old primary stopped as a standby of the new one,
   * and re-point the other replicas (all by default, only `options.repoint` if given; the
   * others stay on the old history, following nobody). A cut-off replica stays cut.
   */
  async promote(name: string, options: PromoteOptions = {}) {
    const target = this.table.runningReplica(name);
    const repoint = options.repoint;
    for (const other of repoint ?? []) {
      const m = this.table.get(other);
      if (m === target || m.node.role !== 'replica')
        throw new Error(`promote(${name}): cannot re-point ${other}: not another replica`);
    }
    const old = this.table.primary();
    if (old.node.running) await this.stop(old.node.name);
    await sql.promote(target.node.url);
    const timeline = await sql.primaryTimeline(target.node.url);
    target.node.role = 'primary';
    target.upstream = undefined;
    old.node.role = 'replica';
    // A stopped node follows the new primary from its next start(). The old primary stays
    // stopped, but as a standby: a later start() must not make two primaries.
    const followOnStart = (m: Member) =>
      this.sh(
        m,
        `touch ${PGDATA}/standby.signal && echo "primary_conninfo = '${this.conninfo(name, m.node.name)}'" >> ${PGDATA}/postgresql.auto.conf`,
      );
    await followOnStart(old);
    old.upstream = name;
    for (const m of this.table.all()) {
      if (m === target || m === old || m.node.role !== 'replica') continue;
      if (repoint && !repoint.includes(m.node.name)) continue;
      m.upstream = name;
      if (m.cut) continue;
      if (!m.node.running) {
        await followOnStart(m);
        continue;
      }
      await this.setConninfo(m, this.conninfo(name, m.node.name));
      if (!(await sql.waitForStreaming(m.node.url, { timeline }, 30_000))) {
        throw new Error(`${m.node.name} does not follow ${name} on timeline ${timeline}`);
      }
    }
  }

  private conninfo(upstream: string, app: string): string {
    return `host=${upstream} port=5432 user=postgres application_name=${app}`;
  }

  /** primary_conninfo is reloadable since PostgreSQL 13: ALTER SYSTEM and a reload. */
  private async setConninfo(m: Member, conninfo: string): Promise<void> {
    await sql.query(m.node.url, `ALTER SYSTEM SET primary_conninfo = '${conninfo}'`);
    await sql.query(m.node.url, 'SELECT pg_reload_conf()');
  }

  /**
   * Clear primary_conninfo and reload: the WAL receiver stops and none starts, while the
   * standby keeps serving reads of what it replayed. Resolves once no receiver runs.
   */
  async cutOff(name: string): Promise<void> {
    const m = this.table.runningReplica(name);
    if (m.cut) return;
    m.cut = true;
    await this.setConninfo(m, '');
    const deadline = Date.now() + STREAMING_TIMEOUT_MS;
    while ((await sql.receiver(m.node.url)) !== undefined) {
      if (Date.now() > deadline)
        throw new Error(
          `${name}'s WAL receiver still runs ${STREAMING_TIMEOUT_MS} ms after the cut`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Point the replica at the current primary again; resolves once it streams (if that runs). */
  async reconnect(name: string): Promise<void> {
    const m = this.table.runningReplica(name);
    const primary = this.table.primary();
    m.cut = false;
    m.upstream = primary.node.name;
    const logOffset = await this.logSize(m);
    await this.setConninfo(m, this.conninfo(primary.node.name, name));
    if (primary.node.running) await this.waitUntilFollowing(m, primary, logOffset);
  }

  /** SIGSTOP every postgres process of the node: its port accepts connections, nothing answers. */
  async freeze(name: string): Promise<void> {
    const m = this.table.get(name);
    if (m.frozen) return;
    if (!m.node.running) throw new Error(`${name} is not running`);
    // Twice: a process forked while the first pass ran is stopped by the second.
    await this.sh(m, `${signalAll('STOP')}\n${signalAll('STOP')}`);
    m.frozen = true;
  }

  async thaw(name: string): Promise<void> {
    const m = this.table.get(name);
    if (!m.frozen) return;
    await this.sh(m, signalAll('CONT'));
    m.frozen = false;
  }

  /**
   * Rebuild a node as a fresh standby of the current primary: kill it if it runs (its data is
   * thrown away), pg_basebackup -R from the primary, start it; resolves once it streams.
   */
  async rejoin(name: string): Promise<void> {
    const m = this.table.get(name);
    const primary = this.table.primary();
    if (m === primary) throw new Error(`rejoin(${name}): it is the current primary`);
    if (!primary.node.running)
      throw new Error(`rejoin(${name}): the primary ${primary.node.name} is not running`);
    await this.kill(name);
    await this.sh(m, GONE);
    const p = primary.node.name;
    await this.sh(
      m,
      `rm -rf ${PGDATA} && pg_basebackup -h ${p} -U postgres -D ${PGDATA} -R -X stream -c fast -d 'application_name=${name}'`,
    );
    m.node.role = 'replica';
    m.cut = false;
    m.upstream = p;
    const logOffset = await this.logSize(m);
    await this.sh(m, `pg_ctl -D ${PGDATA} -l ${LOG} -w start`);
    m.node.running = true;
    await sql.waitUntilAccepting(m.node.url, { timeoutMs: 60_000 });
    await this.waitUntilFollowing(m, primary, logOffset);
  }

  async positions() {
    return this.table.positions((m) => sql.position(m.node.url));
  }
  exec(name: string, text: string) {
    return sql.query(this.table.get(name).node.url, text);
  }
  teardown(): Promise<void> {
    this.done ??= (async () => {
      await Promise.allSettled(this.table.all().map((m) => m.container.stop({ timeout: 0 })));
      await this.network.stop().catch(() => {});
      this.table.allStopped();
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
          throw new Error(
            `${m.node.name} is not streaming after 60 s\n${(await m.container.exec(['bash', '-c', `tail -n 25 ${LOG}`])).output}`,
          );
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
