// A cluster someone else runs, given by URL: the part every flavour shares. Process control is
// not ours; only what SQL can do (pause/resume replay, positions, queries) is, and that comes
// from the flavour's own SQL module.

import { capabilitySet, unsupportedBy } from './capabilities.js';
import type { Cluster, ClusterCapability, ClusterNode, Flavour } from './types.js';

/** The SQL a flavour supplies to an external cluster. */
export interface ExternalSql {
  pauseReplay(url: string): Promise<void>;
  resumeReplay(url: string): Promise<void>;
  position(node: ClusterNode): Promise<string>;
  query(url: string, text: string): Promise<unknown[]>;
}

/** Primary and replica URLs from two environment variables, or why they are missing. */
export function urlsFromEnv(
  primaryEnv: string,
  replicasEnv: string,
): { primary: string; replicas: string[] } | { error: string } {
  const primary = process.env[primaryEnv]?.trim();
  const replicas = (process.env[replicasEnv] ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  if (!primary) return { error: `${primaryEnv} is not set` };
  if (replicas.length === 0)
    return { error: `${replicasEnv} is not set (comma-separated replica URLs)` };
  return { primary, replicas };
}

function makeNode(
  name: string,
  role: ClusterNode['role'],
  url: string,
  defaultPort: number,
): ClusterNode {
  const u = new URL(url);
  return {
    name,
    role,
    host: u.hostname,
    port: u.port ? Number(u.port) : defaultPort,
    url,
    running: true,
  };
}

function unsupported(operation: string, name: string): never {
  throw new Error(
    `${operation}('${name}') is not supported by the external provider: it does not control the servers' processes`,
  );
}

const WHY = "it does not control the servers' processes";

export class ExternalCluster implements Cluster {
  /** Only what SQL can do on someone else's servers. */
  readonly capabilities: ReadonlySet<ClusterCapability> = capabilitySet('pause');
  readonly cutOff = unsupportedBy('the external provider', 'cut-off', WHY);
  readonly reconnect = unsupportedBy('the external provider', 'cut-off', WHY);
  readonly freeze = unsupportedBy('the external provider', 'freeze', WHY);
  readonly thaw = unsupportedBy('the external provider', 'freeze', WHY);
  readonly rejoin = unsupportedBy('the external provider', 'rejoin', WHY);
  private readonly all: ClusterNode[];

  constructor(
    readonly target: string,
    readonly flavour: Flavour,
    readonly version: string,
    primary: string,
    replicas: readonly string[],
    defaultPort: number,
    private readonly sql: ExternalSql,
  ) {
    this.all = [
      makeNode('n0', 'primary', primary, defaultPort),
      ...replicas.map((u, i) => makeNode(`n${i + 1}`, 'replica', u, defaultPort)),
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
    return this.sql.pauseReplay(this.node(name).url);
  }
  resumeReplay(name: string): Promise<void> {
    return this.sql.resumeReplay(this.node(name).url);
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
    const texts = await Promise.all(this.all.map((n) => this.sql.position(n)));
    return Object.fromEntries(this.all.map((n, i) => [n.name, texts[i]!]));
  }
  exec(name: string, text: string): Promise<unknown[]> {
    return this.sql.query(this.node(name).url, text);
  }
  async teardown(): Promise<void> {
    // Not ours to stop. Resume replay we may have paused, so the next run starts clean.
    await Promise.all(this.replicas().map((n) => this.sql.resumeReplay(n.url).catch(() => {})));
  }
}
