import { ErrorCode, TokenError } from '@tidemark/core';
import type { PositionCodec } from '@tidemark/core/adapter';

/** A BSON Timestamp as plain numbers: seconds and the increment within that second. */
export interface MongoTime {
  readonly t: number;
  readonly i: number;
}

/** The signed `$clusterTime` a server gossips; lets another process advance a new session. */
export interface SignedClusterTime {
  readonly time: MongoTime;
  /** Signing key id, as a decimal string (an int64). */
  readonly keyId: string;
  /** HMAC-SHA1 hash, base64url (20 bytes). */
  readonly hash: string;
}

/** A MongoDB replication position: an operationTime, the term, and the signed cluster time. */
export interface MongoPosition {
  /** The session's operationTime (or a member's applied optime timestamp). */
  readonly time: MongoTime;
  /** Election term of the optime; 0 when unknown (the write reply does not carry it). */
  readonly term: number;
  readonly clusterTime?: SignedClusterTime | undefined;
}

const UINT32_MAX = 0xffff_ffff;
const BASE36_NUMBER = /^(0|[1-9a-z][0-9a-z]{0,12})$/;
const HASH = /^[A-Za-z0-9_-]{27}$/;
const SEPARATOR = '.';
const INT64_MAX = (1n << 63n) - 1n;

/** Order of two times: negative, zero or positive like a sort comparator. */
export function compareTimes(a: MongoTime, b: MongoTime): number {
  return a.t === b.t ? a.i - b.i : a.t - b.t;
}

function invalid(text: string, why: string): TokenError {
  return new TokenError(
    ErrorCode.PositionInvalid,
    `MongoDB position ${JSON.stringify(text.slice(0, 80))} is not valid: ${why}.`,
  );
}

function parseNumber(text: string, field: string, max: number): number {
  if (!BASE36_NUMBER.test(field)) throw invalid(text, 'a number is not canonical base36');
  const value = Number.parseInt(field, 36);
  if (!Number.isSafeInteger(value) || value > max) throw invalid(text, 'a number is out of range');
  return value;
}

function parseKeyId(text: string, field: string): string {
  if (!BASE36_NUMBER.test(field)) throw invalid(text, 'the key id is not canonical base36');
  let value = 0n;
  for (const digit of field) value = value * 36n + BigInt(Number.parseInt(digit, 36));
  if (value > INT64_MAX) throw invalid(text, 'the key id is out of range');
  return value.toString();
}

/**
 * Encodes a position as `t.i.term` or `t.i.term.ct.ci.keyId.hash`: numbers in base36, the
 * cluster-time hash in base64url. Every character is URL- and cookie-safe.
 */
export const mongoPositionCodec: PositionCodec<MongoPosition> = {
  kind: 'mongodb',

  encode(position) {
    const fields = [
      position.time.t.toString(36),
      position.time.i.toString(36),
      position.term.toString(36),
    ];
    const signed = position.clusterTime;
    if (signed) {
      fields.push(
        signed.time.t.toString(36),
        signed.time.i.toString(36),
        BigInt(signed.keyId).toString(36),
        signed.hash,
      );
    }
    return fields.join(SEPARATOR);
  },

  decode(text) {
    if (typeof text !== 'string' || text.length > 120) throw invalid(String(text), 'too long');
    const fields = text.split(SEPARATOR);
    if (fields.length !== 3 && fields.length !== 7) throw invalid(text, 'wrong number of fields');
    const [t, i, term, ct, ci, keyId, hash] = fields as [string, string, string, ...string[]];
    const position: MongoPosition = {
      time: { t: parseNumber(text, t, UINT32_MAX), i: parseNumber(text, i, UINT32_MAX) },
      term: parseNumber(text, term, Number.MAX_SAFE_INTEGER),
    };
    if (fields.length === 3) return position;
    if (!HASH.test(hash ?? ''))
      throw invalid(text, 'the cluster-time hash is not 20 bytes of base64url');
    return {
      ...position,
      clusterTime: {
        time: { t: parseNumber(text, ct!, UINT32_MAX), i: parseNumber(text, ci!, UINT32_MAX) },
        keyId: parseKeyId(text, keyId!),
        hash: hash!,
      },
    };
  },

  compare(applied, required) {
    // Rolled-back writes cannot be told apart by time alone (that needs the oplog entry at the
    // required time on the member); this codec reports only covered or behind.
    return compareTimes(applied.time, required.time) >= 0 ? 'covered' : 'behind';
  },

  merge(a, b) {
    const order = compareTimes(a.time, b.time);
    // Two known terms: the later term's history is the one the replica set follows now. Every
    // entry of an earlier term that survived an election is older than the later term's first
    // entry, so an earlier-term position timed past a later-term one was rolled back; keeping it
    // by time would hold a position no member will ever reach again (as PostgreSQL's merge keeps
    // the newer timeline). Otherwise the later term's position is also the later in time.
    const termsDiffer = a.term !== 0 && b.term !== 0 && a.term !== b.term;
    const newer = termsDiffer ? (a.term > b.term ? a : b) : order >= 0 ? a : b;
    const clusterTime = newerClusterTime(a.clusterTime, b.clusterTime);
    // The term belongs to the newer time: pairing it with another position's term would name
    // an oplog entry that does not exist. A read's position has no term (0): history checks of
    // the merged token then go by time alone.
    const term = order === 0 ? Math.max(a.term, b.term) : newer.term;
    return clusterTime === undefined
      ? { time: newer.time, term }
      : { time: newer.time, term, clusterTime };
  },
};

function newerClusterTime(
  a: SignedClusterTime | undefined,
  b: SignedClusterTime | undefined,
): SignedClusterTime | undefined {
  if (!a) return b;
  if (!b) return a;
  return compareTimes(a.time, b.time) >= 0 ? a : b;
}
