import type { TokenData } from '@tidemark/core';
import type { PositionCodec } from '@tidemark/core/adapter';

/**
 * A server-side token store keyed by user, so a write made on one device protects reads made on
 * another (`RedisTokenStore` in @tidemark/redis implements it). The carrier merges what the store
 * holds into each request's session and raises the store when a request raised the session.
 */
export interface TokenStore {
  /** Position codec per cluster name: merging positions needs them (only the adapter can compare). */
  readonly codecs: Readonly<Record<string, PositionCodec<unknown>>>;
  /** The user's stored token, or undefined when none is stored (or it expired). */
  get(userId: string): Promise<TokenData | undefined>;
  /** Merge `positions` into the user's stored token; never lowers a stored position. */
  raise(userId: string, positions: Readonly<Record<string, string>>): Promise<unknown>;
}
