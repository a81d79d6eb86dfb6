import type { PositionCodec } from '../../src/adapter-kit/index.js';
import { ErrorCode, TokenError } from '../../src/index.js';

/**
 * Test-only position: a history number and a sequence number in that history, written `h.seq`.
 * A position in history h is covered by a later history only up to that history's fork point,
 * mimicking a PostgreSQL timeline switch (forks records where each history branched off).
 */
export interface CounterPosition {
  readonly history: number;
  readonly seq: number;
}

export function counterCodec(
  forks: ReadonlyMap<number, number> = new Map(),
): PositionCodec<CounterPosition> {
  /** Is `required` (in an older or same history) inside the ancestry of `history`? */
  function ancestorCovers(applied: CounterPosition, required: CounterPosition): boolean {
    // Walk back from applied.history: position p of history h is shared with history h+1 when
    // p <= fork(h+1).
    let limit = Number.POSITIVE_INFINITY;
    for (let h = applied.history; h > required.history; h--) {
      const fork = forks.get(h);
      if (fork === undefined) return false;
      limit = Math.min(limit, fork);
    }
    return required.seq <= limit;
  }
  return {
    kind: 'counter',
    decode(text) {
      const match = /^([0-9]{1,6})\.([0-9]{1,12})$/.exec(text);
      if (!match)
        throw new TokenError(
          ErrorCode.PositionInvalid,
          `not a counter position: ${text.slice(0, 40)}`,
        );
      return { history: Number(match[1]), seq: Number(match[2]) };
    },
    encode(p) {
      return `${p.history}.${p.seq}`;
    },
    compare(applied, required) {
      if (applied.history === required.history)
        return applied.seq >= required.seq ? 'covered' : 'behind';
      if (applied.history > required.history) {
        return ancestorCovers(applied, required) ? 'covered' : 'other-history';
      }
      // The replica is on an older history than the session: it may still be on the path to it.
      return ancestorCovers(required, applied) ? 'behind' : 'other-history';
    },
    merge(a, b) {
      if (a.history !== b.history) return a.history > b.history ? a : b;
      return a.seq >= b.seq ? a : b;
    },
  };
}
