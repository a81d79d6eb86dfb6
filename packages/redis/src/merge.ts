import { Session } from '@tidemark/core';
import type { PositionCodec } from '@tidemark/core/adapter';

/**
 * Least upper bound of two position maps, per cluster with that cluster's codec (the same merge
 * a Session uses, so a stored position is never lowered). Throws the codec's TokenError when an
 * incoming position does not decode; a stored one that does not decode is replaced.
 * Callers drop incoming clusters without a codec first (see {@link RedisTokenStore.raise}).
 */
export function mergePositions(
  stored: Readonly<Record<string, string>>,
  incoming: Readonly<Record<string, string>>,
  codecs: Readonly<Record<string, PositionCodec<unknown>>>,
): Record<string, string> {
  const session = Session.fromToken({ positions: stored, issuedAt: 0 });
  for (const [cluster, text] of Object.entries(incoming)) {
    const codec = codecs[cluster];
    if (codec) session.raise(cluster, codec, codec.decode(text));
  }
  return { ...session.toTokenData().positions };
}
