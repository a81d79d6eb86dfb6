import { ErrorCode, TokenError } from '@tidemark/core';

/**
 * The one error every parser and decoder in this package throws on bad input: a
 * {@link TokenError} with code `TIDEMARK_POSITION_INVALID`. Positions arrive from tokens that a
 * client may have altered, so every message says what was expected and never echoes much input.
 */
export function invalidPosition(message: string): TokenError {
  return new TokenError(ErrorCode.PositionInvalid, message);
}

/** Short, safe rendering of untrusted input for error messages. */
export function describeInput(value: unknown): string {
  if (typeof value !== 'string') return `a ${value === null ? 'null' : typeof value}`;
  return JSON.stringify(value.length > 48 ? `${value.slice(0, 48)}...` : value);
}
