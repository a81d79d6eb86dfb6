// The 'external' provider: a cluster someone else runs (CI service containers, a staging set-up),
// given by URL. We can only do what SQL can do; process control is not ours.

import { ExternalCluster, urlsFromEnv as urlsFromEnvVars } from '../external-cluster.js';
import { externalMongo } from '../mongo/index.js';
import {
  externalMysqlAvailability,
  isMysqlFamilyTarget,
  startExternalMysqlCluster,
} from '../mysql/external.js';
import * as sql from '../postgres/sql.js';
import type { Availability, Cluster, ClusterProvider, StartOptions } from '../types.js';

export const PRIMARY_ENV = 'TIDEMARK_PG_PRIMARY_URL';
export const REPLICAS_ENV = 'TIDEMARK_PG_REPLICA_URLS';

const urlsFromEnv = () => urlsFromEnvVars(PRIMARY_ENV, REPLICAS_ENV);

function majorOf(target: string): number | undefined {
  const m = /^pg(\d+)$/.exec(target);
  return m ? Number(m[1]) : undefined;
}

export class ExternalProvider implements ClusterProvider {
  readonly name = 'external' as const;

  supports(target: string): boolean {
    return majorOf(target) !== undefined || isMysqlFamilyTarget(target) || target === 'mongo';
  }

  async available(target: string): Promise<Availability> {
    if (isMysqlFamilyTarget(target)) return externalMysqlAvailability(target);
    if (target === 'mongo') return externalMongo.available();
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
    if (target === 'mongo') return externalMongo.start(options);
    const urls = urlsFromEnv();
    if ('error' in urls) throw new Error(`external provider: ${urls.error}`);
    if (options.replicas !== undefined && options.replicas > urls.replicas.length) {
      throw new Error(
        `external provider: ${options.replicas} replicas requested, ${REPLICAS_ENV} lists ${urls.replicas.length}`,
      );
    }
    const replicas = urls.replicas.slice(0, options.replicas ?? urls.replicas.length);
    const version = await sql.serverVersion(urls.primary);
    return new ExternalCluster(target, 'postgres', version, urls.primary, replicas, 5432, {
      pauseReplay: (url) => sql.pauseReplay(url),
      resumeReplay: (url) => sql.resumeReplay(url),
      position: (node) => sql.position(node.url),
      query: (url, text) => sql.query(url, text),
    });
  }
}

export const externalProvider = new ExternalProvider();
