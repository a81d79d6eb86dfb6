// The external provider's MongoDB cluster: a replica set someone else runs, at
// TIDEMARK_MONGO_URI; its primary becomes n0, its secondaries n1, n2 (sorted by host). Pausing
// replay needs the servers' test commands; stop/kill/start/promote throw, as for the other
// external clusters. UNTESTED HERE: no mongod on the machines this was written on; only the
// failures of available() (nothing configured, a bad URI, nobody listening) ran.

import { ExternalCluster, type ExternalSql } from '../external-cluster.js';
import type { Availability, Cluster, StartOptions } from '../types.js';
import { type Hello, pauseApplier, resumeApplier, runAdmin } from './admin.js';
import {
  directUrl,
  formatOpTime,
  type MongoUri,
  membersFromStatus,
  nodeUrl,
  nothingConfigured,
  parseCommandText,
  parseMongoUri,
  redactUri,
  URI_ENV,
} from './commands.js';

const CONNECT_TIMEOUT_MS = 5_000;

/** The URI from the environment, parsed, or why it will not do. */
export function uriFromEnv(env: NodeJS.ProcessEnv): { uri: string; parsed: MongoUri } | string {
  const uri = env[URI_ENV]?.trim();
  if (!uri) return nothingConfigured(`${URI_ENV} is not set`);
  if (uri.startsWith('mongodb+srv:'))
    return `${URI_ENV} must list the hosts (mongodb://h1,h2,h3/?replicaSet=rs): the harness connects to each member directly, which a mongodb+srv URI does not allow`;
  let parsed: MongoUri;
  try {
    parsed = parseMongoUri(uri);
  } catch (err) {
    return `${URI_ENV}: ${(err as Error).message}`;
  }
  if (!parsed.params.get('replicaSet'))
    return `${URI_ENV} (${redactUri(uri)}) has no replicaSet=<name> parameter`;
  return { uri, parsed };
}

async function members(uri: string) {
  return membersFromStatus(await runAdmin(uri, { replSetGetStatus: 1 }, CONNECT_TIMEOUT_MS));
}

const commands: ExternalSql = {
  pauseReplay: (url) => pauseApplier(runAdmin, directUrl(url)),
  resumeReplay: (url) => resumeApplier(runAdmin, directUrl(url)),
  position: async (node) =>
    formatOpTime(((await runAdmin(directUrl(node.url), { hello: 1 })) as Hello).lastWrite?.opTime),
  query: async (url, text) => [await runAdmin(directUrl(url), parseCommandText(text))],
};

export const externalMongo = {
  async available(): Promise<Availability> {
    const env = uriFromEnv(process.env);
    if (typeof env === 'string') return { ok: false, reason: env };
    try {
      const found = await members(env.uri);
      return 'error' in found
        ? { ok: false, reason: `${redactUri(env.uri)}: ${found.error}` }
        : { ok: true };
    } catch (err) {
      return {
        ok: false,
        reason: `cannot reach the replica set at ${redactUri(env.uri)}: ${(err as Error).message}`,
      };
    }
  },

  async start(options: StartOptions = {}): Promise<Cluster> {
    const env = uriFromEnv(process.env);
    if (typeof env === 'string') throw new Error(`external provider: ${env}`);
    const found = await members(env.uri);
    if ('error' in found) throw new Error(`external provider: ${found.error}`);
    const wanted = options.replicas ?? found.secondaries.length;
    if (wanted > found.secondaries.length)
      throw new Error(
        `external provider: ${wanted} replicas requested, the set has ${found.secondaries.length} secondaries`,
      );
    const url = (host: string) => nodeUrl(host, found.setName, env.parsed);
    const primary = url(found.primary);
    const info = await runAdmin(directUrl(primary), { buildInfo: 1 });
    const replicas = found.secondaries.slice(0, wanted).map(url);
    return new ExternalCluster(
      'mongo',
      'mongo',
      String(info['version']),
      primary,
      replicas,
      27017,
      commands,
    );
  },
};
