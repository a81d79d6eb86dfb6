import { SOCKET_ERROR_CODES, someErrorInChain } from '@tidemark/core/adapter';

/**
 * SQLSTATEs that say "this server cannot serve you right now": admin_shutdown (57P01),
 * crash_shutdown (57P02), cannot_connect_now (57P03, starting up or in recovery without hot
 * standby), database_dropped (57P04), too_many_connections (53300), and a hot-standby
 * recovery conflict (40001 on a replica: the query was cancelled because replay needed its rows).
 */
const SERVER_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '57P04', '53300', '40001']);

/** Messages node-postgres and pg-pool use for connections lost without a code. */
const LOST_CONNECTION = [
  /connection terminated/i,
  /terminated unexpectedly/i,
  /timeout exceeded when trying to connect/i,
  /connection error and is not queryable/i,
  /client was closed and is not queryable/i,
];

/**
 * Whether a failed read deserves one retry on another node: the connection or the server failed
 * (codes above, and every class 08 connection exception). Errors in the caller's SQL, such as
 * 25006 read_only_sql_transaction from a write inside a read or 42xxx syntax and name errors, are
 * not: they fail the same way everywhere.
 */
export function isRetryablePgError(error: unknown): boolean {
  return someErrorInChain(error, (e) => {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string') {
      if (
        SOCKET_ERROR_CODES.has(code) ||
        SERVER_UNAVAILABLE.has(code) ||
        /^08[0-9A-Z]{3}$/.test(code)
      ) {
        return true;
      }
      // A SQLSTATE means the server answered: anything not listed is about the query.
      if (/^[0-9A-Z]{5}$/.test(code)) return false;
    }
    return typeof message === 'string' && LOST_CONNECTION.some((pattern) => pattern.test(message));
  });
}
