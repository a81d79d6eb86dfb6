/**
 * Parse a PostgreSQL LSN (`X/Y`, hex) into a bigint. node-postgres returns pg_lsn as text, and
 * text comparison is wrong (`0/A` > `0/10`), so compare numbers. The lab router keeps its own
 * parser on purpose: it is the baseline and must not borrow Tidemark's code.
 */
export function lsnToBigInt(text: string): bigint {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (!match) throw new Error(`not an LSN: ${JSON.stringify(text)}`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}
