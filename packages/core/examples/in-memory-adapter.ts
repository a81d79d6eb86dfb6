/**
 * A complete Tidemark adapter over an in-memory "database": the worked example of the core
 * README's "Writing an adapter". A primary appends rows to a log; each replica has applied a
 * prefix of it and catches up when told (`replicate`). A position is the length of the log, so
 * the codec is a number. Everything a real adapter does is here, minus the SQL: read-only reads,
 * capture after commit, probes, the closed state, typed errors. Run the router over it:
 *
 *   const cluster = new MemoryCluster(['r1', 'r2']);
 *   const router = new Router({ adapter: createMemoryAdapter(cluster) });
 *   await router.ready();
 */

import type { Adapter, PositionCodec, ReadContext } from '../src/adapter-kit/index.js';
import {
  AdapterLifecycle,
  PRIMARY,
  UnknownReplicaError,
  WAIT_UNSUPPORTED,
} from '../src/adapter-kit/index.js';
import type { WriteOptions } from '../src/index.js';
import { TokenError } from '../src/index.js';

/** The connection a callback receives: the rows the node has, and (on the primary) `insert`. */
export interface MemoryConnection {
  readonly rows: readonly string[];
  insert(row: string): void;
}

/** One primary's log and how much of it each replica has applied. */
export class MemoryCluster {
  readonly log: string[] = [];
  readonly applied: Map<string, number>;

  constructor(readonly replicaIds: readonly string[]) {
    this.applied = new Map(replicaIds.map((id) => [id, 0]));
  }

  /** Let `id` (or every replica) apply the whole log. */
  replicate(id?: string): void {
    for (const replica of id === undefined ? this.replicaIds : [id]) {
      this.applied.set(replica, this.log.length);
    }
  }
}

/** Positions are log lengths: `covered` when the replica has applied at least as many rows. */
export const memoryCodec: PositionCodec<number> = {
  kind: 'memory',
  decode(text) {
    // Strict: only what encode produces (no sign, no leading zeros, bounded).
    if (!/^(0|[1-9][0-9]{0,14})$/.test(text)) {
      throw new TokenError(
        'TIDEMARK_POSITION_INVALID',
        `Not a memory position: ${text.slice(0, 40)}`,
      );
    }
    return Number(text);
  },
  encode: (position) => String(position),
  compare: (applied, required) => (applied >= required ? 'covered' : 'behind'),
  merge: (a, b) => Math.max(a, b),
};

export function createMemoryAdapter(cluster: MemoryCluster): Adapter<number, MemoryConnection> {
  const lifecycle = new AdapterLifecycle('memory');
  const appliedOf = (target: string): number => {
    if (target === PRIMARY) return cluster.log.length;
    const applied = cluster.applied.get(target);
    if (applied === undefined) throw new UnknownReplicaError(target, cluster.replicaIds);
    return applied;
  };
  return {
    codec: memoryCodec,
    replicas: cluster.replicaIds,
    async read<T>(target: string, fn: (c: MemoryConnection) => Promise<T>, context: ReadContext) {
      lifecycle.assertOpen();
      const seen = appliedOf(target);
      const connection: MemoryConnection = {
        rows: cluster.log.slice(0, seen),
        insert: () => {
          // Reads are read-only on every node, the primary included (invariant 7).
          throw new Error('cannot insert in a read-only transaction');
        },
      };
      const value = await fn(connection);
      // The router settles the position from a later probe unless asked to observe here.
      return context.observe === false ? { value } : { value, observed: seen };
    },
    async write<T>(fn: (c: MemoryConnection) => Promise<T>, _options: WriteOptions) {
      lifecycle.assertOpen();
      const pending: string[] = [];
      const value = await fn({ rows: cluster.log, insert: (row) => pending.push(row) });
      cluster.log.push(...pending); // the commit
      return { value, position: cluster.log.length }; // captured after it, free here
    },
    async probe(id) {
      lifecycle.assertOpen();
      return { applied: appliedOf(id), lagSeconds: 0 };
    },
    async probePrimary() {
      lifecycle.assertOpen();
      return cluster.log.length;
    },
    // No server-side wait: the router polls the probes instead.
    waitFor: async () => WAIT_UNSUPPORTED,
    isRetryable: (error) => !(error instanceof Error && /read-only/.test(error.message)),
    close: () => lifecycle.close(async () => undefined),
  };
}
