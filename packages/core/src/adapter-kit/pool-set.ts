import { PRIMARY } from '../adapter.js';
import { UnknownReplicaError } from './errors.js';

/** The pools (or clients) of one node: reads and waits on one, probes on the other. */
export interface NodePools<T> {
  readonly read: T;
  readonly monitor: T;
}

/** The primary's pools: writes get their own, so reads never queue behind them. */
export interface PrimaryPools<T> extends NodePools<T> {
  readonly write: T;
}

/** Which pool of a node is being built. */
export type PoolRole = 'write' | 'read' | 'monitor';

/**
 * Every pool of an adapter, built once from the configured sources: write, read and monitor
 * pools on the primary, read and monitor pools on each replica. Pools connect lazily, so building
 * them does no I/O. One object answers the lookups every adapter needs (by route target, by
 * replica id with a typed error for an unknown one) and ends them all on close.
 */
export class PoolSet<T> {
  readonly primary: PrimaryPools<T>;
  /** Replica ids in configuration order: what the adapter exposes as `replicas`. */
  readonly replicaIds: readonly string[];
  private readonly replicas: ReadonlyMap<string, NodePools<T>>;

  constructor(primary: PrimaryPools<T>, replicas: ReadonlyMap<string, NodePools<T>>) {
    this.primary = primary;
    this.replicas = replicas;
    this.replicaIds = [...replicas.keys()];
  }

  /** The pools of a route target: `primary` or a replica id. @throws UnknownReplicaError */
  node(target: string): NodePools<T> {
    return target === PRIMARY ? this.primary : this.replica(target);
  }

  /** The pools of one replica. @throws UnknownReplicaError for an id not configured. */
  replica(id: string): NodePools<T> {
    const pools = this.replicas.get(id);
    if (!pools) throw new UnknownReplicaError(id, this.replicaIds);
    return pools;
  }

  /** Every distinct pool, primary first. */
  all(): T[] {
    const pools = new Set<T>([this.primary.write, this.primary.read, this.primary.monitor]);
    for (const node of this.replicas.values()) {
      pools.add(node.read);
      pools.add(node.monitor);
    }
    return [...pools];
  }

  /**
   * End every pool at once. A pool that fails to end is not the caller's problem at shutdown
   * (its connections are gone either way), so failures are dropped.
   */
  async end(endPool: (pool: T) => Promise<unknown>): Promise<void> {
    await Promise.all(this.all().map((pool) => endPool(pool).catch(() => undefined)));
  }
}

/**
 * Build the pools of an adapter from its configured sources (URLs or driver options).
 *
 * @param build makes one pool for one role of one node; it may return the same object for
 *   several roles (a MongoDB client serves every role), which {@link PoolSet.all} lists once.
 */
export function createPoolSet<S, T>(
  primary: S,
  replicas: Readonly<Record<string, S>>,
  build: (source: S, role: PoolRole, node: string) => T,
): PoolSet<T> {
  const nodes = new Map<string, NodePools<T>>();
  for (const [id, source] of Object.entries(replicas)) {
    nodes.set(id, { read: build(source, 'read', id), monitor: build(source, 'monitor', id) });
  }
  return new PoolSet(
    {
      write: build(primary, 'write', PRIMARY),
      read: build(primary, 'read', PRIMARY),
      monitor: build(primary, 'monitor', PRIMARY),
    },
    nodes,
  );
}
