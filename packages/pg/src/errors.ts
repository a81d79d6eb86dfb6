import { AdapterError } from '@tidemark/core/adapter';

/**
 * Stable codes of the errors this adapter throws itself, for failures only PostgreSQL shows
 * (transaction outcomes). They complement core's ErrorCode.
 */
export const PgErrorCode = {
  /** The managed transaction was rolled back at COMMIT (an earlier statement in it had failed). */
  RolledBack: 'TIDEMARK_PG_ROLLED_BACK',
  /** A `transaction: false` write returned with a transaction still open on its connection. */
  TransactionLeftOpen: 'TIDEMARK_PG_TRANSACTION_LEFT_OPEN',
  /** The server answered a capture or probe with something the adapter cannot read. */
  UnexpectedResult: 'TIDEMARK_PG_UNEXPECTED_RESULT',
} as const;

export type PgErrorCode = (typeof PgErrorCode)[keyof typeof PgErrorCode];

/** A write that did not commit, or whose position could not be read. Never retryable. */
export class PgAdapterError extends AdapterError<PgErrorCode> {}
