import { ErrorCode, TokenError } from '@tidemark/core';
import { type PositionCodec, parseBase36BigInt } from '@tidemark/core/adapter';
import { assertLsn } from './lsn.js';
import { isTimeline, TimelineHistory } from './timeline-history.js';

/** A point in one PostgreSQL replication history: a timeline and a WAL position on it. */
export interface PgPosition {
  readonly timeline: number;
  readonly lsn: bigint;
}

/**
 * `<timeline base36>.<lsn base36>`, lowercase, no leading zeros: one canonical text per position
 * (so `encode(decode(text)) === text`), at most 7 + 1 + 13 characters.
 */
const ENCODED = /^([1-9a-z][0-9a-z]{0,6})\.(0|[1-9a-z][0-9a-z]{0,12})$/;

/**
 * The position codec for PostgreSQL: encodes positions compactly for tokens and compares them
 * across timelines using `history`.
 *
 * A position on an older timeline belongs to a newer timeline's history only when its LSN is at or
 * below every switch point on the path between them; past a switch point it is `other-history`
 * (a write lost in a failover, or a replica that replayed it). Within one history, plain LSN order
 * decides `covered` or `behind`. When the path is not known yet, the answer is `other-history`,
 * never `covered`.
 *
 * @param history Timeline switches; the adapter keeps its own up to date. Default: empty, which
 *   makes positions on different timelines `other-history`.
 */
export function createPgCodec(
  history: TimelineHistory = new TimelineHistory(),
): PositionCodec<PgPosition> {
  return {
    kind: 'pg',
    decode(text: string): PgPosition {
      const match = typeof text === 'string' ? ENCODED.exec(text) : null;
      if (match) {
        const timeline = Number.parseInt(match[1] as string, 36);
        const lsn = parseLsnDigits(match[2] as string);
        if (isTimeline(timeline) && lsn !== undefined) return { timeline, lsn };
      }
      throw new TokenError(
        ErrorCode.PositionInvalid,
        'Position is not a PostgreSQL position (<timeline>.<lsn> in base 36); the token was altered or comes from another adapter.',
      );
    },
    encode(position: PgPosition): string {
      assertPosition(position);
      return `${position.timeline.toString(36)}.${position.lsn.toString(36)}`;
    },
    compare(applied: PgPosition, required: PgPosition) {
      if (!sameHistory(history, applied, required)) return 'other-history';
      return applied.lsn >= required.lsn ? 'covered' : 'behind';
    },
    merge(a: PgPosition, b: PgPosition): PgPosition {
      const [newer, older] = a.timeline >= b.timeline ? [a, b] : [b, a];
      // Different histories have no upper bound: keep the newer timeline, which is the one the
      // cluster follows now, and let comparisons surface the conflict.
      if (!sameHistory(history, newer, older) || newer.lsn >= older.lsn) return newer;
      // Shared history where the newer timeline's position lies before the older one (a replica
      // on the new timeline that has not replayed up to the switch yet): the same LSN on the
      // newer timeline covers both.
      return { timeline: newer.timeline, lsn: older.lsn };
    },
  };
}

/**
 * True when both positions lie on one line of history: the same timeline, or the older one is an
 * ancestor of the newer one and its position is at or before every switch point in between (LSNs
 * then continue from one timeline to the next, so plain LSN order applies). Unknown ancestry is
 * never one history.
 */
function sameHistory(history: TimelineHistory, a: PgPosition, b: PgPosition): boolean {
  if (a.timeline === b.timeline) return true;
  const [newer, older] = a.timeline > b.timeline ? [a, b] : [b, a];
  const limit = history.sharedLimit(newer.timeline, older.timeline);
  return limit !== undefined && older.lsn <= limit;
}

function assertPosition(position: PgPosition): void {
  if (!isTimeline(position.timeline)) {
    throw new TokenError(
      ErrorCode.PositionInvalid,
      `Timeline ${String(position.timeline)} is not a PostgreSQL timeline (1 .. 2^32-1).`,
    );
  }
  assertLsn(position.lsn);
}

const MAX_LSN = (1n << 64n) - 1n;

function parseLsnDigits(digits: string): bigint | undefined {
  const value = parseBase36BigInt(digits);
  return value <= MAX_LSN ? value : undefined;
}
