// MySQL-family clusters for the 'external' provider: a source and replicas someone else runs,
// given by URL. Only what SQL can do; process control is not ours. Registered by
// providers/external.ts next to its PostgreSQL clusters.

import type { Availability, Cluster, ClusterNode, StartOptions } from '../types.js';
import { dialectFor, type MysqlFlavour, type ReplicationDialect } from './dialect.js';
import * as sql from './sql.js';
import { mysqlFamilyTarget } from './targets.js';

export const MYSQL_PRIMARY_ENV = 'TIDEMARK_MYSQL_PRIMARY_URL';
export const MYSQL_REPLICAS_ENV = 'TIDEMARK_MYSQL_REPLICA_URLS';

export function isMysqlFamilyTarget(target: string): boolean {
  return mysqlFamilyTarget(target) !== undefined;
}

function urlsFromEnv(): { primary: string; replicas: string[] } | { error: string } {
  const primary = process.env[MYSQL_PRIMARY_ENV]?.trim();
  const replicas = (process.env[MYSQL_REPLICAS_ENV] ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  if (!primary) return { error: `${MYSQL_PRIMARY_ENV} is not set` };
  if (replicas.length === 0)
    return { error: `${MYSQL_REPLICAS_ENV} is not set (comma-separated replica URLs)` };
  return { primary, replicas };
}

function makeNode(name: string, role: ClusterNode['role'], url: string): ClusterNode {
  const u = new URL(url);
  return {
    name,
    role,
    host: u.hostname,
    port: u.port ? Number(u.port) : 3306,
    url,
    running: true,
  };
}

function unsupported(operation: string, name: string): never {
  throw new Error(
    `${operation}('${name}') is not supported by the external provider: it does not control the servers' processes`,
  );
}

class ExternalMysqlCluster implements Cluster {
  private readonly all: ClusterNode[];
  private readonly dialect: ReplicationDialect;

  constructor(
    readonly target: string,
    readonly flavour: MysqlFlavour,
    readonly version: string,
    primary: string,
    replicas: string[],
  ) {
    this.dialect = dialectFor(flavour);
    this.all = [
      makeNode('n0', 'primary', primary),
      ...replicas.map((u, i) => makeNode(`n${i + 1}`, 'replica', u)),
    ];
  }

  private node(name: string): ClusterNode {
    const node = this.all.find((n) => n.name === name);
    if (!node)
      throw new Error(`no node '${name}' (nodes: ${this.all.map((n) => n.name).join(', ')})`);
    return node;
  }

  primary(): ClusterNode {
    return this.all[0]!;
  }
  replicas(): ClusterNode[] {
    return this.all.slice(1);
  }
  nodes(): ClusterNode[] {
    return [...this.all];
  }
  pauseReplay(name: string): Promise<void> {
    return this.dialect.stopApplier(this.node(name).url);
  }
  resumeReplay(name: string): Promise<void> {
    return this.dialect.startApplier(this.node(name).url);
  }
  async stop(name: string): Promise<void> {
    unsupported('stop', name);
  }
  async kill(name: string): Promise<void> {
    unsupported('kill', name);
  }
  async start(name: string): Promise<void> {
    unsupported('start', name);
  }
  async promote(name: string): Promise<void> {
    unsupported('promote', name);
  }
  async positions(): Promise<Record<string, string>> {
    const texts = await Promise.all(this.all.map((n) => this.dialect.position(n.url, n.role)));
    return Object.fromEntries(this.all.map((n, i) => [n.name, texts[i]!]));
  }
  exec(name: string, text: string): Promise<unknown[]> {
    return sql.query(this.node(name).url, text);
  }
  async teardown(): Promise<void> {
    // Not ours to stop. Resume replay we may have paused, so the next run starts clean.
    await Promise.all(this.replicas().map((n) => this.dialect.startApplier(n.url).catch(() => {})));
  }
}

/** Why the servers in the environment cannot serve as `target`, or undefined if they can. */
export async function externalMysqlAvailability(target: string): Promise<Availability> {
  const want = mysqlFamilyTarget(target);
  if (!want) return { ok: false, reason: `'${target}' is not a MySQL-family target` };
  const urls = urlsFromEnv();
  if ('error' in urls) return { ok: false, reason: urls.error };
  const dialect = dialectFor(want.flavour);
  try {
    const version = await sql.scalar(urls.primary, 'SELECT VERSION() AS v');
    const flavour: MysqlFlavour = /mariadb/i.test(version) ? 'mariadb' : 'mysql';
    if (flavour !== want.flavour || !version.startsWith(`${want.series}.`)) {
      return {
        ok: false,
        reason: `${MYSQL_PRIMARY_ENV} is ${flavour} ${version}, target ${target} wants ${want.flavour} ${want.series}`,
      };
    }
    if ((await dialect.status(urls.primary)) !== undefined) {
      return {
        ok: false,
        reason: `${MYSQL_PRIMARY_ENV} (${sql.redact(urls.primary)}) is configured as a replica, not a source`,
      };
    }
    for (const url of urls.replicas) {
      if ((await dialect.status(url)) === undefined)
        return { ok: false, reason: `replica ${sql.redact(url)} is not configured as a replica` };
    }
  } catch (err) {
    return { ok: false, reason: `cannot query the external cluster: ${(err as Error).message}` };
  }
  return { ok: true };
}

export async function startExternalMysqlCluster(
  target: string,
  options: StartOptions = {},
): Promise<Cluster> {
  const want = mysqlFamilyTarget(target);
  if (!want) throw new Error(`external provider: '${target}' is not a MySQL-family target`);
  const urls = urlsFromEnv();
  if ('error' in urls) throw new Error(`external provider: ${urls.error}`);
  if (options.replicas !== undefined && options.replicas > urls.replicas.length) {
    throw new Error(
      `external provider: ${options.replicas} replicas requested, ${MYSQL_REPLICAS_ENV} lists ${urls.replicas.length}`,
    );
  }
  const replicas = urls.replicas.slice(0, options.replicas ?? urls.replicas.length);
  const version = await sql.scalar(urls.primary, 'SELECT VERSION() AS v');
  return new ExternalMysqlCluster(target, want.flavour, version, urls.primary, replicas);
}
