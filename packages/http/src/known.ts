import { assertClusterName, ConfigError, ErrorCode, TokenError } from '@tidemark/core';
import type { PositionCodec } from '@tidemark/core/adapter';

/**
 * A cluster the carrier carries tokens for, with the codec that orders its positions. A core
 * `Router` has both fields, so `routers: [ordersRouter, billingRouter]` works as it is.
 */
export interface KnownCluster {
  readonly cluster: string;
  readonly codec: PositionCodec<unknown>;
}

/** Codecs per cluster name. */
export type CodecMap = ReadonlyMap<string, PositionCodec<unknown>>;

/**
 * One codec per cluster from routers, then a codecs record, then more records (the store's).
 * The first codec given for a cluster is used; a codec of another kind for the same cluster is
 * a configuration error (positions of one cluster must be comparable).
 */
export function codecMap(
  routers: Iterable<KnownCluster> | undefined,
  ...records: Array<Readonly<Record<string, PositionCodec<unknown>>> | undefined>
): Map<string, PositionCodec<unknown>> {
  const known = new Map<string, PositionCodec<unknown>>();
  const add = (cluster: string, codec: PositionCodec<unknown>, from: string): void => {
    assertClusterName(cluster);
    if (!codec || typeof codec.decode !== 'function' || typeof codec.merge !== 'function') {
      throw new ConfigError(`${from} for cluster "${cluster}" has no position codec.`);
    }
    const existing = known.get(cluster);
    if (existing === undefined) {
      known.set(cluster, codec);
    } else if (existing.kind !== codec.kind) {
      throw new ConfigError(
        `Cluster "${cluster}" has two position codecs of different kinds ("${existing.kind}" and "${codec.kind}" from ${from}); give each database its own cluster name.`,
      );
    }
  };
  for (const router of routers ?? []) add(router.cluster, router.codec, 'a router');
  for (const record of records) {
    for (const [cluster, codec] of Object.entries(record ?? {})) add(cluster, codec, 'codecs');
  }
  return known;
}

/**
 * Decode a position with its cluster's codec. Throws a TokenError: the codec's own, or
 * TIDEMARK_POSITION_INVALID for anything else a codec threw.
 */
export function decodePosition(
  codec: PositionCodec<unknown>,
  cluster: string,
  text: string,
): { position: unknown; text: string } {
  try {
    const position = codec.decode(text);
    // The canonical text, so that equal positions from two sources compare equal.
    return { position, text: codec.encode(position) };
  } catch (error) {
    if (error instanceof TokenError) throw error;
    if (isTokenErrorLike(error)) throw new TokenError(error.code, error.message, { cause: error });
    throw new TokenError(
      ErrorCode.PositionInvalid,
      `The position for cluster "${cluster}" could not be decoded with its ${codec.kind} codec: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/**
 * A Tidemark error by its shape: a second copy of core (CommonJS next to ESM) has its own
 * TokenError class, so `instanceof` alone would lose the code.
 */
export function isTokenErrorLike(error: unknown): error is Error & { code: `TIDEMARK_${string}` } {
  if (!(error instanceof Error)) return false;
  const code: unknown = (error as Error & { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('TIDEMARK_');
}
