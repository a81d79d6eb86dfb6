import { ErrorCode, TokenError } from '@tidemark/core';

/** Largest LSN PostgreSQL can express: WAL positions are unsigned 64-bit byte offsets. */
export const MAX_LSN = (1n << 64n) - 1n;

/**
 * PostgreSQL's text form: two hexadecimal halves of at most 8 digits each. PostgreSQL 19 zero-pads
 * the low half (`0/030314D0`), 15 and 18 do not (`0/3A1F2C8`), so both are accepted.
 */
const LSN_TEXT = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/;

/**
 * Parse a PostgreSQL LSN (`pg_lsn` text such as `16/B374D848`) into a bigint.
 *
 * Strict: anything PostgreSQL would not print is rejected, so a value that passes can be compared
 * numerically and inlined back into SQL through {@link formatLsn}.
 *
 * @throws TokenError with code `TIDEMARK_POSITION_INVALID` on any other input.
 */
export function parseLsn(text: string): bigint {
  const match = typeof text === 'string' ? LSN_TEXT.exec(text) : null;
  if (!match) {
    throw new TokenError(
      ErrorCode.PositionInvalid,
      `${describe(text)} is not a PostgreSQL LSN; expected two hexadecimal halves like 16/B374D848.`,
    );
  }
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/**
 * Format an LSN the way PostgreSQL 15-18 print it: uppercase hexadecimal halves, no zero padding
 * (`16/B374D848`, `0/0`). The result only ever contains `0-9 A-F /`, which is what makes it safe to
 * inline into statements such as `WAIT FOR LSN` that take no bind parameters.
 *
 * @throws TokenError with code `TIDEMARK_POSITION_INVALID` when `lsn` is not in 0 .. 2^64-1.
 */
export function formatLsn(lsn: bigint): string {
  assertLsn(lsn);
  const high = lsn >> 32n;
  const low = lsn & 0xffffffffn;
  return `${high.toString(16).toUpperCase()}/${low.toString(16).toUpperCase()}`;
}

/** Throws unless `lsn` is a bigint PostgreSQL could hold as an LSN. */
export function assertLsn(lsn: bigint): void {
  if (typeof lsn !== 'bigint' || lsn < 0n || lsn > MAX_LSN) {
    throw new TokenError(
      ErrorCode.PositionInvalid,
      `LSN ${String(lsn)} is outside 0 .. 2^64-1; it cannot come from PostgreSQL.`,
    );
  }
}

/** Short, safe rendering of untrusted input for error messages. */
function describe(value: unknown): string {
  if (typeof value !== 'string') return `A ${typeof value}`;
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
}
