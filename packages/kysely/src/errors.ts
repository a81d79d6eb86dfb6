import { TidemarkError } from '@tidemark/core';

/** Stable codes of the errors this package throws (all `TIDEMARK_`-prefixed, like core's). */
export const KyselyErrorCode = {
  /** A transaction call out of order: commit without begin, begin twice, a savepoint outside one. */
  TransactionState: 'TIDEMARK_KYSELY_TRANSACTION_STATE',
  /** A connection from another driver was handed to the Tidemark driver. */
  ForeignConnection: 'TIDEMARK_KYSELY_FOREIGN_CONNECTION',
  /** Bad input to a stream (chunk size). */
  BadArgument: 'TIDEMARK_KYSELY_BAD_ARGUMENT',
} as const;

export type KyselyErrorCode = (typeof KyselyErrorCode)[keyof typeof KyselyErrorCode];

/** A misuse of the Tidemark Kysely driver; the message says what to do instead. */
export class TidemarkKyselyError extends TidemarkError {
  declare readonly code: KyselyErrorCode;
  constructor(code: KyselyErrorCode, message: string) {
    super(code, message);
  }
}
