import { AdapterError } from '@tidemark/core/adapter';

/**
 * Stable codes of the errors the MySQL/MariaDB adapter throws itself. They complement core's
 * ErrorCode and share its `TIDEMARK_` prefix.
 */
export const MysqlErrorCode = {
  /**
   * The server cannot report positions: MySQL without `gtid_mode = ON`, or MariaDB without a
   * binary log. Tidemark would otherwise capture empty positions and serve stale reads.
   */
  PositionsUnavailable: 'TIDEMARK_MYSQL_POSITIONS_UNAVAILABLE',
  /** A `transaction: false` write returned with a transaction still open on its connection. */
  TransactionLeftOpen: 'TIDEMARK_MYSQL_TRANSACTION_LEFT_OPEN',
  /** The server answered a capture, probe or wait with something the adapter cannot read. */
  UnexpectedResult: 'TIDEMARK_MYSQL_UNEXPECTED_RESULT',
  /** A server-side wait was refused by the server (for example error 1772, a malformed set). */
  WaitFailed: 'TIDEMARK_MYSQL_WAIT_FAILED',
  /** The installed mysql2 does not expose what the adapter hooks into. */
  UnsupportedDriver: 'TIDEMARK_MYSQL_UNSUPPORTED_DRIVER',
} as const;

export type MysqlErrorCode = (typeof MysqlErrorCode)[keyof typeof MysqlErrorCode];

/** An error of the adapter's own making. Never retryable: retrying would fail the same way. */
export class MysqlAdapterError extends AdapterError<MysqlErrorCode> {}

/** The server's answer did not have the shape the adapter expects. */
export function unexpected(detail: string, cause?: unknown): MysqlAdapterError {
  return new MysqlAdapterError(
    MysqlErrorCode.UnexpectedResult,
    `The server answered in a form the adapter does not understand (${detail}); check that it is MySQL 8.0.17+ with gtid_mode = ON or MariaDB 10.5+ with a binary log.`,
    cause === undefined ? undefined : { cause },
  );
}
