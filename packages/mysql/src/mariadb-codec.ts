import type { Comparison, PositionCodec } from '@tidemark/core/adapter';
import {
  compareMariadbPositions,
  decodeMariadbPositionToken,
  encodeMariadbPositionToken,
  type MariadbCompareOptions,
  type MariadbGtidPosition,
  mergeMariadbPositions,
} from './mariadb-gtid.js';
import { memoizeParse } from './parse-cache.js';

/**
 * The position codec for MariaDB: a position is a {@link MariadbGtidPosition} (one
 * `domain-server-seq` per domain); tokens hold it in the form of
 * {@link encodeMariadbPositionToken}.
 *
 * - `compare` is {@link compareMariadbPositions}: covered when every required domain has reached
 *   the required sequence number; a domain the replica does not name is `behind`; in strict mode
 *   an equal sequence number from another server is `other-history`.
 * - `merge` is {@link mergeMariadbPositions}: per domain, the higher sequence number.
 */
export function createMariadbCodec(
  options: MariadbCompareOptions = {},
): PositionCodec<MariadbGtidPosition> {
  const compareOptions: MariadbCompareOptions = { strictMode: options.strictMode ?? true };
  return {
    kind: 'mariadb',
    // Decoded positions are frozen: every token that carries one shares one parse.
    decode: memoizeParse(decodeMariadbPositionToken),
    encode: encodeMariadbPositionToken,
    compare(applied: MariadbGtidPosition, required: MariadbGtidPosition): Comparison {
      return compareMariadbPositions(applied, required, compareOptions);
    },
    merge: mergeMariadbPositions,
  };
}
