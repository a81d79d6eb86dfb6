/**
 * A synchronous in-memory cluster for the micro-benchmark: every adapter call resolves at once,
 * so what the benchmark measures is the router's own work (planning, session bookkeeping,
 * promise hops), not I/O. Positions are plain sequence numbers.
 */

import type {
  Adapter,
  PositionCodec,
  ProbeResult,
  ReadOutcome,
  WriteOutcome,
} from '../src/adapter-kit/index.js';
import { ErrorCode, type ReplicaState, TokenError } from '../src/index.js';

/** Positions are non-negative integers, written in base 10. */
export const sequenceCodec: PositionCodec<number> = {
  kind: 'sequence',
  decode(text) {
    if (!/^[0-9]{1,15}$/.test(text)) {
      throw new TokenError(ErrorCode.PositionInvalid, 'not a sequence position');
    }
    return Number(text);
  },
  encode: (position) => String(position),
  compare: (applied, required) => (applied >= required ? 'covered' : 'behind'),
  merge: (a, b) => Math.max(a, b),
};

/** What read callbacks receive. */
export interface MemoryConnection {
  readonly node: string;
  readonly applied: number;
}

/** Adapter over fixed replica positions; `primarySeq` grows with writes. */
export class InMemoryAdapter implements Adapter<number, MemoryConnection> {
  readonly codec = sequenceCodec;
  readonly replicas: readonly string[];
  primarySeq: number;
  private readonly applied: Map<string, number>;

  constructor(appliedByReplica: readonly number[], primarySeq: number) {
    this.replicas = appliedByReplica.map((_, i) => `r${i}`);
    this.applied = new Map(appliedByReplica.map((seq, i) => [`r${i}`, seq]));
    this.primarySeq = primarySeq;
  }

  async read<T>(
    target: string,
    fn: (connection: MemoryConnection) => Promise<T>,
  ): Promise<ReadOutcome<T, number>> {
    const applied = this.applied.get(target) ?? this.primarySeq;
    const value = await fn({ node: target, applied });
    return { value, observed: applied };
  }

  async write<T>(
    fn: (connection: MemoryConnection) => Promise<T>,
  ): Promise<WriteOutcome<T, number>> {
    const value = await fn({ node: 'primary', applied: this.primarySeq });
    return { value, position: ++this.primarySeq };
  }

  async probe(replicaId: string): Promise<ProbeResult<number>> {
    const applied = this.applied.get(replicaId) ?? 0;
    return { applied, lagSeconds: (this.primarySeq - applied) / 1000 };
  }

  async probePrimary(): Promise<number> {
    return this.primarySeq;
  }

  async close(): Promise<void> {}
}

/** Monitor-shaped replica states, as planRead sees them after a round of probes. */
export function replicaStates(
  appliedByReplica: readonly number[],
  now: number,
): ReplicaState<number>[] {
  return appliedByReplica.map((applied, i) => ({
    id: `r${i}`,
    reachable: true,
    applied,
    lagSeconds: (1000 - applied) / 1000,
    lagBytes: undefined,
    paused: false,
    history: 'current' as const,
    behindPrimarySince: undefined,
    sampledAt: now,
    failures: 0,
    lastError: undefined,
  }));
}
