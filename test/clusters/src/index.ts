// Entry point: pick a provider and start a cluster for a target.

import { externalProvider } from './providers/external.js';
import { localProvider } from './providers/local/index.js';
import { testcontainersProvider } from './providers/testcontainers.js';
import { PG_TARGETS } from './targets.js';
import type { Cluster, ClusterProvider, StartOptions } from './types.js';

export {
  capabilitySet,
  notSupported,
  ownClusterCapabilities,
  providerCapabilities,
  unsupportedBy,
} from './capabilities.js';
// The concrete local clusters, for tests that need their data directory (e.g. to find their
// processes) or, for MySQL-family clusters, the harness's admin account (adminUrl).
export { LocalMysqlCluster } from './providers/local/mysql.js';
export { LocalPgCluster } from './providers/local/postgres.js';
export type {
  Availability,
  Cluster,
  ClusterCapability,
  ClusterNode,
  ClusterProvider,
  Flavour,
  PromoteOptions,
  StartOptions,
} from './types.js';
export { ALL_CAPABILITIES, DEFAULT_REPLICAS, STAGING_CAPABILITIES } from './types.js';
export { externalProvider, localProvider, testcontainersProvider };

export const PROVIDERS: Record<ClusterProvider['name'], ClusterProvider> = {
  local: localProvider,
  testcontainers: testcontainersProvider,
  external: externalProvider,
};

// Every target name and its kind is in src/targets.ts.
export {
  isTarget,
  MYSQL_TARGETS,
  PG_TARGETS,
  TARGETS,
  type TargetInfo,
  type TargetName,
  targetKind,
} from './targets.js';

/** @deprecated The PostgreSQL targets: use PG_TARGETS. */
export const DEFAULT_TARGETS = PG_TARGETS;

export function getProvider(name: string): ClusterProvider {
  const provider = (PROVIDERS as Record<string, ClusterProvider | undefined>)[name];
  if (!provider) {
    throw new Error(
      `unknown cluster provider '${name}' (known: ${Object.keys(PROVIDERS).join(', ')})`,
    );
  }
  return provider;
}

/**
 * Start a cluster for `target` ('pg15', 'pg18', 'pg19', 'mysql97', 'mariadb1011') with the
 * provider named in `options.provider`, else env TIDEMARK_PROVIDER, else 'local'. Throws an Error
 * carrying the reason when the provider cannot run the target here; callers should let that fail
 * the test.
 */
export async function startCluster(
  target: string,
  options: StartOptions & { provider?: string } = {},
): Promise<Cluster> {
  const name = options.provider ?? process.env['TIDEMARK_PROVIDER'] ?? 'local';
  const provider = getProvider(name);
  if (!provider.supports(target)) {
    throw new Error(`cluster provider '${name}' does not support target '${target}'`);
  }
  const availability = await provider.available(target);
  if (!availability.ok) {
    throw new Error(`cannot start ${target} with the '${name}' provider: ${availability.reason}`);
  }
  const { provider: _ignored, ...startOptions } = options;
  return provider.start(target, startOptions);
}
export {
  type LeaseWorkloadOptions,
  type LeaseWorkloadResult,
  runLeaseWorkload,
  type WorkloadLease,
  type WorkloadLeaseRouter,
} from './lease-workload.js';
export * from './mongo-sim/index.js';
export { mongoReplicaSetUri } from './mongo-url.js';
export {
  checkObservation,
  type ObservationCheck,
  type ObservationCheckOptions,
  type ObservingAdapter,
} from './observation-check.js';
export { freePorts } from './ports.js';
export { keptLines, readmeSnippet, runSnippet } from './readme-snippets.js';
export { type RedisServer, startRedisServer } from './redis-server.js';
export {
  type MonotonicReadsOptions,
  type MonotonicReadsResult,
  type ReadYourWritesOptions,
  type ReadYourWritesResult,
  replicaReads,
  runMonotonicReads,
  runReadYourWrites,
  type WorkloadDecision,
  type WorkloadReadRouter,
} from './router-workloads.js';
export { eventually, noSignal, sleep, waitForRow, waitForTable } from './wait-for.js';
