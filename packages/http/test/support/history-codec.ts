import { ErrorCode, TokenError } from '@tidemark/core';
import type { PositionCodec } from '@tidemark/core/adapter';

/** A test position: a history number and a sequence number in it, written `h.seq`. */
export interface HistoryPosition {
  readonly history: number;
  readonly seq: number;
}

/**
 * Positions in different histories never cover each other (no fork points are known), like
 * PostgreSQL timelines whose history is not known yet; merge keeps the newer history.
 */
export const historyCodec: PositionCodec<HistoryPosition> = {
  kind: 'history',
  decode(text) {
    const match = /^([0-9]{1,6})\.([0-9]{1,12})$/.exec(text);
    if (!match) {
      throw new TokenError(
        ErrorCode.PositionInvalid,
        `not a history position: ${text.slice(0, 40)}`,
      );
    }
    return { history: Number(match[1]), seq: Number(match[2]) };
  },
  encode: (p) => `${p.history}.${p.seq}`,
  compare(applied, required) {
    if (applied.history !== required.history) return 'other-history';
    return applied.seq >= required.seq ? 'covered' : 'behind';
  },
  merge(a, b) {
    if (a.history !== b.history) return a.history > b.history ? a : b;
    return a.seq >= b.seq ? a : b;
  },
};

/** What a Router exposes to carriers: its cluster name and its position codec. */
export function routerLike(cluster: string): { cluster: string; codec: PositionCodec<unknown> } {
  return { cluster, codec: historyCodec as PositionCodec<unknown> };
}
