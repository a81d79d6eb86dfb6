import type { Document } from 'mongodb';

/** The two halves of a BSON Timestamp: seconds, and the ordinal within that second. */
export interface TimestampLike {
  readonly t: number;
  readonly i: number;
}

/**
 * An oplog time as one bigint (seconds in the high 32 bits, ordinal in the low 32), so times
 * compare with `>=`. The demo keeps its own conversion on purpose: the lab router is the baseline
 * and must not borrow Tidemark's code.
 */
export function opTimeToBigInt(ts: TimestampLike): bigint {
  return (BigInt(ts.t) << 32n) | BigInt(ts.i);
}

/** `lastWrite.opTime.ts` of a `hello` reply: the newest oplog entry the member has applied. */
export function appliedOpTime(hello: Document): TimestampLike {
  const ts = hello['lastWrite']?.opTime?.ts as TimestampLike | undefined;
  if (ts === undefined) {
    throw new Error('hello reply has no lastWrite.opTime: is this member part of a replica set?');
  }
  return ts;
}
