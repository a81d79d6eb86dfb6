import { ErrorCode, TokenError } from '@tidemark/core';
import type { PositionCodec } from '@tidemark/core/adapter';

/** A position that is just a counter: enough to test merges without a database. */
export const counterCodec: PositionCodec<number> = {
  kind: 'counter',
  decode(text) {
    if (!/^(0|[1-9][0-9]{0,14})$/.test(text)) {
      throw new TokenError(ErrorCode.PositionInvalid, `not a counter: ${text}`);
    }
    return Number(text);
  },
  encode: (position) => String(position),
  compare: (applied, required) => (applied >= required ? 'covered' : 'behind'),
  merge: (a, b) => Math.max(a, b),
};
