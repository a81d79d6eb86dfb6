import type { TokenData } from '@tidemark/core';
import { RedisErrorCode, RedisStoreError } from './errors.js';

/** What one stored entry holds: positions per cluster and when it was last raised (Unix s). */
export function encodeEntry(data: TokenData): string {
  return JSON.stringify({ v: 1, positions: data.positions, issuedAt: data.issuedAt });
}

/** Strict parse of a stored entry; anything else is a corrupt entry. */
export function decodeEntry(text: string): TokenData {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw corrupt();
  }
  if (typeof parsed !== 'object' || parsed === null) throw corrupt();
  const { v, positions, issuedAt } = parsed as Record<string, unknown>;
  if (
    v !== 1 ||
    typeof issuedAt !== 'number' ||
    typeof positions !== 'object' ||
    positions === null
  ) {
    throw corrupt();
  }
  const clean: Record<string, string> = {};
  for (const [cluster, position] of Object.entries(positions)) {
    if (typeof position !== 'string') throw corrupt();
    clean[cluster] = position;
  }
  return { positions: clean, issuedAt };
}

function corrupt(): RedisStoreError {
  return new RedisStoreError(
    RedisErrorCode.CorruptEntry,
    'A stored token entry is not in the format this store writes; another program may use the same key prefix. Choose a distinct keyPrefix.',
    false,
  );
}
