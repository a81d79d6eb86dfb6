// MongoDB clusters (mongo-sim and mongo) give each node the URL
// `mongodb://<host>:<port>/?replicaSet=<set>`; applications connect to the set as a whole. This
// turns the first into the second, for every caller that needs the set's URI.

import type { Cluster } from './types.js';

/**
 * The replica-set URI of a MongoDB cluster: every node's host:port, the set name from the
 * primary's URL, and the write concern `w` (`majority` unless a caller needs unreplicated writes).
 */
export function mongoReplicaSetUri(
  cluster: Pick<Cluster, 'nodes' | 'primary'>,
  w: 'majority' | '1' = 'majority',
): string {
  const hosts = cluster.nodes().map((node) => `${node.host}:${node.port}`);
  const setName = new URL(cluster.primary().url).searchParams.get('replicaSet');
  if (!setName) {
    throw new Error(`MongoDB cluster URL ${cluster.primary().url} names no replicaSet.`);
  }
  return `mongodb://${hosts.join(',')}/?replicaSet=${encodeURIComponent(setName)}&w=${w}`;
}
