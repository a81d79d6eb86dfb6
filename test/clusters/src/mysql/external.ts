// MySQL-family clusters for the 'external' provider: a source and replicas someone else runs,
// given by URL. Only what SQL can do; process control is not ours. Registered by
// providers/external.ts next to its PostgreSQL clusters.

import { ExternalCluster, urlsFromEnv as urlsFromEnvVars } from '../external-cluster.js';
import type { Availability, Cluster, StartOptions } from '../types.js';
import { dialectFor, type MysqlFlavour } from './dialect.js';
import * as sql from './sql.js';
import { mysqlFamilyTarget } from './targets.js';

export const MYSQL_PRIMARY_ENV = 'TIDEMARK_MYSQL_PRIMARY_URL';
export const MYSQL_REPLICAS_ENV = 'TIDEMARK_MYSQL_REPLICA_URLS';

const urlsFromEnv = () => urlsFromEnvVars(MYSQL_PRIMARY_ENV, MYSQL_REPLICAS_ENV);

export function isMysqlFamilyTarget(target: string): boolean {
  return mysqlFamilyTarget(target) !== undefined;
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
  const dialect = dialectFor(want.flavour);
  return new ExternalCluster(target, want.flavour, version, urls.primary, replicas, 3306, {
    pauseReplay: (url) => dialect.stopApplier(url),
    resumeReplay: (url) => dialect.startApplier(url),
    position: (node) => dialect.position(node.url, node.role),
    query: (url, text) => sql.query(url, text),
  });
}
