import { SOCKET_ERROR_CODES, someErrorInChain } from '@tidemark/core/adapter';

/** mysql2's own code for a connection the server or network dropped mid-command. */
const CONNECTION_LOST = 'PROTOCOL_CONNECTION_LOST';

/**
 * Server errors that say "this server cannot serve you right now", not "your statement is wrong":
 * 1040 too many connections, 1053 server shutdown in progress, 1077-1080 shutdown, 1152 aborted
 * connection, 1158-1161 network read/write errors, 1203 too many user connections, 1317 query
 * interrupted (KILL QUERY, shutdown), 1927 connection killed (MariaDB), 2002/2003/2006/2013 client
 * connection errors, 3032 server in offline mode, 4031 disconnected by the idle timeout.
 */
const SERVER_UNAVAILABLE = new Set([
  1040, 1053, 1077, 1078, 1079, 1080, 1152, 1158, 1159, 1160, 1161, 1203, 1317, 1927, 2002, 2003,
  2006, 2013, 3032, 4031,
]);

/**
 * Whether a failed read deserves one retry on another node: the connection or the server failed
 * (codes above, or any error mysql2 marks `fatal`, which means the connection is dead). Errors in
 * the caller's SQL are not retried: they fail the same way everywhere. That includes 1792 (write
 * in a read-only transaction), 1290 (super_read_only), 1836 (read-only mode), syntax errors (1064)
 * and unknown tables (1146).
 */
export function isRetryableMysqlError(error: unknown): boolean {
  return someErrorInChain(error, (e) => {
    const { code, errno, fatal } = e as { code?: unknown; errno?: unknown; fatal?: unknown };
    if (typeof errno === 'number' && SERVER_UNAVAILABLE.has(errno)) return true;
    if (typeof code === 'string' && (SOCKET_ERROR_CODES.has(code) || code === CONNECTION_LOST)) {
      return true;
    }
    return fatal === true;
  });
}
