/** 36^10 < 2^53: up to ten base-36 digits parse exactly as a double, in one call. */
const EXACT_AS_DOUBLE_DIGITS = 10;

/**
 * The value of base-36 digits (`0-9a-z`, already validated by the caller) as a bigint, for
 * position codecs whose numbers may pass 2^53 (a PostgreSQL LSN, a MariaDB sequence number).
 * Tokens decode a position on every read; most such numbers fit a double, which parses in one
 * call instead of a bigint step per digit.
 */
export function parseBase36BigInt(digits: string): bigint {
  if (digits.length <= EXACT_AS_DOUBLE_DIGITS) return BigInt(Number.parseInt(digits, 36));
  let value = 0n;
  for (const char of digits) value = value * 36n + BigInt(Number.parseInt(char, 36));
  return value;
}
