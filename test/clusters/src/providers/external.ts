// The 'external' provider: a cluster someone else runs (CI service containers, a staging set-up),
// given by URL. We can only do what SQL can do; process control is not ours.

import {
  externalMysqlAvailability,
  isMysqlFamilyTarget,
  startExternalMysqlCluster,
} from '../mysql/external.js';
import * as sql from '../postgres/sql.js';
import type {
  Availability,
  Cluster,
  ClusterNode,
  ClusterProvider,
  StartOptions,
} from '../types.js';

export const PRIMARY_ENV = 'TIDEMARK_PG_PRIMARY_URL';
export const REPLICAS_ENV = 'TIDEMARK_PG_REPLICA_URLS';

function urlsFromEnv(): { primary: string; replicas: string[] } | { error: string } {
  const primary = process.env[PRIMARY_ENV]?.trim();
  const replicas = (process.env[REPLICAS_ENV] ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  if (!primary) return { error: `${PRIMARY_ENV} is not set` };
  if (replicas.length === 0)
    return { error: `${REPLICAS_ENV} is not set (comma-separated replica URLs)` };
  return { primary, replicas };
}

function majorOf(target: string): number | undefined {
  const m = /^pg(\d+)$/.exec(target);
  return m ? Number(m[1]) : undefined;
}

function makeNode(name: string, role: ClusterNode['role'], url: string): ClusterNode {
  const u = new URL(url);
  return {
    name,
    role,
    host: u.hostname,
    port: u.port ? Number(u.port) : 5432,
    url,
    running: true,
  };
}

function unsupported(operation: string, name: string): never {
  throw new Error(
    `${operation}('${name}') is not supported by the external provider: it does not control the servers' processes`,
  );
}

class ExternalPgCluster implements Cluster {
  readonly flavour = 'postgres' as const;
  private readonly all: ClusterNode[];

  constructor(
    readonly target: string,
    readonly version: string,
    primary: string,
    replicas: string[],
  ) {
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
    return sql.pauseReplay(this.node(name).url);
  }
  resumeReplay(name: string): Promise<void> {
    return sql.resumeReplay(this.node(name).url);
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
    const lsns = await Promise.all(this.all.map((n) => sql.position(n.url)));
    return Object.fromEntries(this.all.map((n, i) => [n.name, lsns[i]!]));
  }
  exec(name: string, text: string): Promise<unknown[]> {
    return sql.query(this.node(name).url, text);
  }
  async teardown(): Promise<void> {
    // Not ours to stop. Resume replay we may have paused, so the next run starts clean.
    await Promise.all(this.replicas().map((n) => sql.resumeReplay(n.url).catch(() => {})));
  }
}

export class ExternalProvider implements ClusterProvider {
  readonly name = 'external' as const;

  supports(target: string): boolean {
    return majorOf(target) !== undefined || isMysqlFamilyTarget(target);
  }

  async available(target: string): Promise<Availability> {
    if (isMysqlFamilyTarget(target)) return externalMysqlAvailability(target);
    const major = majorOf(target);
    if (major === undefined)
      return {
        ok: false,
        reason: `the external provider knows PostgreSQL targets (pgNN) and mysql97, mariadb1011, not '${target}'`,
      };
    const urls = urlsFromEnv();
    if ('error' in urls) return { ok: false, reason: urls.error };
    try {
      const { num } = await sql.queryOne<{ num: string }>(
        urls.primary,
        "SELECT current_setting('server_version_num') AS num",
      );
      const found = Math.floor(Number(num) / 10_000);
      if (found !== major)
        return {
          ok: false,
          reason: `${PRIMARY_ENV} is PostgreSQL ${found}, target ${target} wants ${major}`,
        };
      if (await sql.inRecovery(urls.primary))
        return {
          ok: false,
          reason: `${PRIMARY_ENV} (${sql.redact(urls.primary)}) is in recovery, not a primary`,
        };
      for (const url of urls.replicas) {
        if (!(await sql.inRecovery(url)))
          return { ok: false, reason: `replica ${sql.redact(url)} is not in recovery` };
      }
    } catch (err) {
      return { ok: false, reason: `cannot query the external cluster: ${(err as Error).message}` };
    }
    return { ok: true };
  }

  async start(target: string, options: StartOptions = {}): Promise<Cluster> {
    if (isMysqlFamilyTarget(target)) return startExternalMysqlCluster(target, options);
    const urls = urlsFromEnv();
    if ('error' in urls) throw new Error(`external provider: ${urls.error}`);
    if (options.replicas !== undefined && options.replicas > urls.replicas.length) {
      throw new Error(
        `external provider: ${options.replicas} replicas requested, ${REPLICAS_ENV} lists ${urls.replicas.length}`,
      );
    }
    const replicas = urls.replicas.slice(0, options.replicas ?? urls.replicas.length);
    const version = await sql.serverVersion(urls.primary);
    return new ExternalPgCluster(target, version, urls.primary, replicas);
  }
}

export const externalProvider = new ExternalProvider();
