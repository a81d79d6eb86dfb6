import { ConfigError, type TidemarkError } from '@tidemark/core';

/** Error codes only the MongoDB adapter raises. Stable: match on them, not on messages. */
export const MongoErrorCode = {
  /** A write callback ran no operation in the session it was given, so there is no position. */
  NoOperationTime: 'TIDEMARK_MONGO_NO_OPERATION_TIME',
  /** A read callback called a write helper; reads run read-only on every member. */
  WriteInRead: 'TIDEMARK_MONGO_WRITE_IN_READ',
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
