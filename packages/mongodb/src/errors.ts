import { ConfigError, TidemarkError } from '@tidemark/core';

/** Error codes only the MongoDB adapter raises. Stable: match on them, not on messages. */
export const MongoErrorCode = {
  /** A write callback ran no operation in the session it was given, so there is no position. */
  NoOperationTime: 'TIDEMARK_MONGO_NO_OPERATION_TIME',
  /** A read callback called a write helper; reads run read-only on every member. */
  WriteInRead: 'TIDEMARK_MONGO_WRITE_IN_READ',
  /** A write asked for `transaction: true`, which this adapter does not run (see `write`). */
  TransactionUnsupported: 'TIDEMARK_MONGO_TRANSACTION_UNSUPPORTED',
  /** A write callback returned with a transaction it started still open; it was aborted. */
  TransactionLeftOpen: 'TIDEMARK_MONGO_TRANSACTION_LEFT_OPEN',
  /** A member answered a probe with something the adapter cannot read. */
  UnexpectedReply: 'TIDEMARK_MONGO_UNEXPECTED_REPLY',
} as const satisfies Record<string, TidemarkError['code']>;

/**
 * The primary client's write concern is not `majority`. Without it a write can be acknowledged
 * and then rolled back in a failover, so its token points at a write that no longer exists.
 */
export class MajorityWriteConcernRequiredError extends ConfigError {
  constructor(actual: unknown) {
    super(
      `@tidemark/mongodb needs write concern { w: 'majority' } on the primary client (got w: ${JSON.stringify(actual ?? 'default')}). Add w=majority to the URI or clientOptions, or pass allowNonMajorityWrites: true to accept that acknowledged writes may be rolled back after a failover and tokens may then name lost writes.`,
    );
  }
}

/** A reply without what the adapter needs. Not retryable: the member would answer the same. */
export function unexpectedReply(detail: string): TidemarkError {
  return new TidemarkError(MongoErrorCode.UnexpectedReply, `@tidemark/mongodb: ${detail}`);
}
