/**
 * Helpers adapters use to decide which failed reads deserve a retry (invariant 6). Every driver
 * reports a lost connection with the same Node socket codes and wraps errors differently
 * (`cause` chains, AggregateError for multi-address connects); the walk lives here once.
 */

/** Node socket error codes that mean the server or the network went away, not the query. */
export const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

const MAX_DEPTH = 4;

/**
 * True when `predicate` holds for `error`, for an error in its `cause` chain, or for one of an
 * AggregateError's errors (Node reports a refused connection to every address of a host name
 * that way). Bounded depth: error graphs from drivers can be cyclic.
 */
export function someErrorInChain(error: unknown, predicate: (error: object) => boolean): boolean {
  return walk(error, predicate, 0);
}

/** True when the error (or one it wraps) carries a Node socket error code. */
export function isSocketError(error: unknown): boolean {
  return someErrorInChain(error, (e) => {
    const code = (e as { code?: unknown }).code;
    return typeof code === 'string' && SOCKET_ERROR_CODES.has(code);
  });
}

function walk(error: unknown, predicate: (error: object) => boolean, depth: number): boolean {
  if (depth > MAX_DEPTH || typeof error !== 'object' || error === null) return false;
  if (predicate(error)) return true;
  if (
    error instanceof AggregateError &&
    error.errors.some((inner) => walk(inner, predicate, depth + 1))
  ) {
    return true;
  }
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && walk(cause, predicate, depth + 1);
}
