import type { PgPosition } from './codec.js';
import { PgAdapterError, PgErrorCode } from './errors.js';
import { parseLsn } from './lsn.js';
import { isTimeline } from './timeline-history.js';
import { toRecordEnd, type WalGeometry } from './wal-geometry.js';

type Row = Record<string, unknown>;

/** Position of a primary from a {@link PRIMARY_POSITION_SQL} row. */
export function primaryPosition(
  row: Row | undefined,
  geometry: WalGeometry | undefined,
): PgPosition {
  if (row === undefined) throw unexpected('no row for the primary position');
  return {
    timeline: walFileTimeline(row['wal_tli']),
    lsn: toRecordEnd(lsnColumn(row['lsn']), geometry),
  };
}

/**
 * Position of any node from a {@link NODE_POSITION_SQL} (or {@link OBSERVE_SQL}) row. For a
 * replica the timeline is the WAL receiver's; while it is disconnected, the larger of the last
 * timeline seen on this node and the last restartpoint's timeline (absent from an observation
 * row). Both can only be at or below the real one (timelines never go back), so a wrong guess can
 * make a replica look like another history, never like it applied something it did not.
 */
export function nodePosition(
  row: Row | undefined,
  lastTimeline: number | undefined,
  geometry: WalGeometry | undefined,
): PgPosition {
  if (row === undefined) throw unexpected('no row for the node position');
  if (row['in_recovery'] === false) return primaryPosition(row, geometry);
  const received = optionalTimeline(row['received_tli']);
  const checkpoint = optionalTimeline(row['checkpoint_tli']);
  const timeline = received ?? Math.max(lastTimeline ?? 1, checkpoint ?? 1);
  return { timeline, lsn: lsnColumn(row['lsn']) };
}

export function lsnColumn(value: unknown): bigint {
  if (typeof value !== 'string') throw unexpected(`LSN column is ${String(value)}`);
  return parseLsn(value);
}

function walFileTimeline(value: unknown): number {
  if (typeof value !== 'string' || !/^[0-9A-Fa-f]{8}$/.test(value)) {
    throw unexpected(`timeline column is ${String(value)}`);
  }
  const timeline = Number.parseInt(value, 16);
  if (!isTimeline(timeline)) throw unexpected(`timeline ${timeline}`);
  return timeline;
}

function optionalTimeline(value: unknown): number | undefined {
  const timeline = typeof value === 'number' ? value : Number(value ?? Number.NaN);
  return isTimeline(timeline) ? timeline : undefined;
}

export function unexpected(detail: string): PgAdapterError {
  return new PgAdapterError(
    PgErrorCode.UnexpectedResult,
    `PostgreSQL answered in a form the adapter does not understand (${detail}); check that the server is PostgreSQL 14 or newer.`,
  );
}
