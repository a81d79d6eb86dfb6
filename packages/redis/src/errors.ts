import { TidemarkError } from '@tidemark/core';

/** Stable codes of @tidemark/redis. */
export const RedisErrorCode = {
  /** The compare-and-set lost to concurrent raises more times than `maxAttempts`. */
  Contention: 'TIDEMARK_REDIS_CONTENTION',
  /** A stored entry is not a token this store wrote (another program uses the key prefix). */
  CorruptEntry: 'TIDEMARK_REDIS_CORRUPT_ENTRY',
} as const;

export type RedisErrorCode = (typeof RedisErrorCode)[keyof typeof RedisErrorCode];

/** An error of the Redis token store; `retryable` says whether the same call may succeed later. */
export class RedisStoreError extends TidemarkError {
  constructor(code: RedisErrorCode, message: string, retryable: boolean) {
    super(code, message, { retryable });
  }
}
