// Pure parts of the MongoDB clusters (flags, replica-set config documents, URIs, parsing), all
// unit-tested. UNTESTED HERE: no mongod on the machines this was written on; the documents follow
// the manual (replSetInitiate, replSetReconfig force, hello), no real server has seen them.

import { BSON, type Document, type Timestamp } from 'mongodb';

export const MONGOD_ENV = 'TIDEMARK_MONGOD';
export const URI_ENV = 'TIDEMARK_MONGO_URI';
export const IMAGE_ENV = 'TIDEMARK_TC_IMAGE_MONGO';
export const DEFAULT_IMAGE = 'mongo:8.0';

/** Why no MongoDB cluster can start, naming every way to get one. */
export function nothingConfigured(missing: string): string {
  return `${missing}. Give one of: ${MONGOD_ENV}=/path/to/mongod (local provider), ${URI_ENV}=mongodb://h1,h2,h3/?replicaSet=rs with TIDEMARK_PROVIDER=external, or a Docker engine with TIDEMARK_PROVIDER=testcontainers`;
}

/** The flags every member runs with: small (a 2-core shared machine) and with fail points on. */
export function mongodArgs(o: { setName: string; port: number; dbPath: string }): string[] {
  const flags = {
    replSet: o.setName,
    port: o.port,
    bind_ip: '127.0.0.1',
    dbpath: o.dbPath,
    setParameter: 'enableTestCommands=1',
    oplogSize: 64,
    wiredTigerCacheSizeGB: 0.25,
  };
  // --nounixsocket: no socket file in /tmp for a SIGKILL to leave behind.
  return [...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, String(v)]), '--nounixsocket'];
}

/** Version from `mongod --version` ("db version v8.0.4"), or undefined. */
export function parseMongodVersion(output: string): string | undefined {
  return /db version v?(\d+\.\d+\.\d+\S*)/.exec(output)?.[1];
}

export interface MemberConfig {
  _id: number;
  host: string;
  priority?: number;
  votes?: number;
  [key: string]: unknown;
}

export interface ReplSetConfig {
  _id: string;
  version: number;
  members: MemberConfig[];
  [key: string]: unknown;
}

/** replSetInitiate document: the first host has priority 2 so that it is, and stays, primary. */
export function initiateConfig(setName: string, hosts: readonly string[]): ReplSetConfig {
  return {
    _id: setName,
    version: 1,
    members: hosts.map((host, i) => ({ _id: i, host, priority: i === 0 ? 2 : 1 })),
  };
}

const votes = (m: MemberConfig) => m.votes ?? 1;

/** Does `running` hold a majority of the voting members? */
export function hasMajority(config: ReplSetConfig, running: readonly string[]): boolean {
  const voters = config.members.filter((m) => votes(m) > 0);
  return voters.filter((m) => running.includes(m.host)).length * 2 > voters.length;
}

/**
 * The next version of `config` with each member mapped, or undefined when nothing changes. The
 * `term` is left out: the server fills it in (and ignores ours on a forced reconfig).
 */
function nextConfig(
  config: ReplSetConfig,
  map: (m: MemberConfig) => MemberConfig,
): ReplSetConfig | undefined {
  const { term: _term, ...rest } = config;
  const members = config.members.map(map);
  const same = members.every(
    (m, i) => m.priority === config.members[i]!.priority && votes(m) === votes(config.members[i]!),
  );
  return same ? undefined : { ...rest, version: config.version + 1, members };
}

/**
 * After a promotion with a majority up: the new primary gets the highest priority, so that the
 * old primary (priority 2 until now) does not take over again once it is back.
 */
export function preferConfig(config: ReplSetConfig, target: string): ReplSetConfig | undefined {
  return nextConfig(config, (m) => {
    if (m.host === target) return { ...m, priority: 2 };
    return { ...m, priority: votes(m) > 0 ? 1 : 0 };
  });
}

/**
 * For a forced reconfig on `target` when no majority is up: every member stays, but those not
 * running lose their vote (and so must have priority 0), so the running ones, `target` first,
 * form a majority by themselves.
 */
export function forcedConfig(
  config: ReplSetConfig,
  target: string,
  running: readonly string[],
): ReplSetConfig | undefined {
  return nextConfig(config, (m) => {
    if (m.host === target) return { ...m, priority: 2, votes: 1 };
    const up = running.includes(m.host);
    return { ...m, priority: up ? 1 : 0, votes: up ? 1 : 0 };
  });
}

/** Give a member its vote back (one voter change per reconfig, as safe reconfig requires). */
export function withVoter(config: ReplSetConfig, host: string): ReplSetConfig | undefined {
  return nextConfig(config, (m) =>
    m.host === host && votes(m) === 0 ? { ...m, priority: 1, votes: 1 } : m,
  );
}

/** hello's `lastWrite.opTime` as `seconds:increment/term`. */
export function formatOpTime(opTime: { ts: Timestamp; t: unknown } | undefined): string {
  if (!opTime?.ts) throw new Error('the member reported no lastWrite.opTime in hello');
  return `${opTime.ts.t}:${opTime.ts.i}/${String(opTime.t)}`;
}

/** A database command given as JSON text (Extended JSON, relaxed), for exec(). */
export function parseCommandText(text: string): Document {
  let doc: unknown;
  try {
    doc = BSON.EJSON.parse(text, { relaxed: true });
  } catch (err) {
    throw new Error(`exec: not a JSON document (${(err as Error).message}): ${text.slice(0, 200)}`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc) || Object.keys(doc).length === 0) {
    throw new Error(
      `exec: give a command as a JSON object whose first key names it, e.g. {"ping": 1}; got ${text.slice(0, 200)}`,
    );
  }
  return doc as Document;
}

/** Primary and healthy secondaries from a replSetGetStatus reply, or why it will not do. */
export function membersFromStatus(
  status: Document,
): { setName: string; primary: string; secondaries: string[] } | { error: string } {
  const members = (status['members'] ?? []) as Array<{
    name: string;
    stateStr: string;
    health?: number;
  }>;
  const up = members.filter((m) => m.health !== 0);
  const primary = up.find((m) => m.stateStr === 'PRIMARY')?.name;
  const secondaries = up.filter((m) => m.stateStr === 'SECONDARY').map((m) => m.name);
  const states = members.map((m) => `${m.name} ${m.stateStr}`).join(', ') || 'no members';
  if (!primary) return { error: `the replica set has no primary (${states})` };
  if (secondaries.length < 2)
    return { error: `the replica set needs at least 2 healthy secondaries (${states})` };
  return { setName: String(status['set']), primary, secondaries: secondaries.sort() };
}

export interface MongoUri {
  auth: string;
  hosts: string[];
  db: string;
  params: URLSearchParams;
}

/** Parse `mongodb://[auth@]h1[,h2...]/[db][?options]` (WHATWG URL cannot: several hosts). */
export function parseMongoUri(uri: string): MongoUri {
  const m = /^mongodb:\/\/(?:([^@/]*)@)?([^/?@]+)\/?([^?]*)(?:\?(.*))?$/.exec(uri.trim());
  if (!m) throw new Error(`not a mongodb://host[,host...] URI: ${redactUri(uri)}`);
  return {
    auth: m[1] ?? '',
    hosts: m[2]!.split(','),
    db: m[3] ?? '',
    params: new URLSearchParams(m[4]),
  };
}

export function formatMongoUri(u: MongoUri): string {
  const query = u.params.toString();
  return `mongodb://${u.auth ? `${u.auth}@` : ''}${u.hosts.join(',')}/${u.db}${query ? `?${query}` : ''}`;
}

/**
 * A node's url: `mongodb://<host>:<port>/?replicaSet=<setName>`, keeping credentials and options
 * of `base` (the external provider's URI) when given.
 */
export function nodeUrl(host: string, setName: string, base?: MongoUri): string {
  const params = new URLSearchParams(base?.params);
  params.delete('directConnection');
  params.set('replicaSet', setName);
  return formatMongoUri({ auth: base?.auth ?? '', hosts: [host], db: base?.db ?? '', params });
}

/** The same member without replica-set discovery: commands go to it even when it is no primary. */
export function directUrl(url: string): string {
  const u = parseMongoUri(url);
  u.params.delete('replicaSet');
  u.params.set('directConnection', 'true');
  return formatMongoUri({ ...u, hosts: u.hosts.slice(0, 1) });
}

/** `host:port` split; IPv6 hosts keep their brackets. */
export function splitHost(hostPort: string): { host: string; port: number } {
  const i = hostPort.lastIndexOf(':');
  if (i < 0 || hostPort.endsWith(']')) return { host: hostPort, port: 27017 };
  return { host: hostPort.slice(0, i), port: Number(hostPort.slice(i + 1)) };
}

export function redactUri(uri: string): string {
  return uri.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
