/**
 * Page layout of a server's WAL, from `pg_control_init()`. Needed to relate the two forms an LSN
 * takes: insert positions and record-end positions.
 */
export interface WalGeometry {
  readonly blockSize: bigint;
  readonly segmentSize: bigint;
  /** MAXALIGN of the server build; page header sizes depend on it. */
  readonly maxAlign: number;
}

/** SQL returning the columns {@link walGeometryFromRow} reads. */
export const WAL_GEOMETRY_SQL =
  'SELECT wal_block_size, bytes_per_wal_segment::text AS segment_size, max_data_alignment FROM pg_control_init()';

export function walGeometryFromRow(row: Record<string, unknown>): WalGeometry {
  return {
    blockSize: BigInt(String(row['wal_block_size'])),
    segmentSize: BigInt(String(row['segment_size'])),
    maxAlign: Number(row['max_data_alignment']),
  };
}

/** MAXALIGN(sizeof(XLogPageHeaderData)) and MAXALIGN(sizeof(XLogLongPageHeaderData)) at 8. */
const SHORT_HEADER = 24n;
const LONG_HEADER = 40n;

/**
 * Map an insert position (`pg_current_wal_insert_lsn()`) to the record-end form replicas report.
 *
 * When the last record ends exactly on a WAL page boundary, the insert position points past the
 * next page's header (boundary + 24, or + 40 at a segment start), while a replica that replayed
 * that record reports the boundary itself (measured: about 1 commit in 370 on PostgreSQL 15). The
 * header holds no record data, so both name the same state; without this mapping such a token
 * would look unreplayed until the primary writes again, and a failover exactly there would look
 * like a lost write. Only applied when the header sizes are certain (8-byte alignment); otherwise
 * the position is left as is, which can only cost a wait, never a stale read.
 */
export function toRecordEnd(lsn: bigint, geometry: WalGeometry | undefined): bigint {
  if (geometry === undefined || geometry.maxAlign !== 8) return lsn;
  const inSegment = lsn % geometry.segmentSize;
  if (inSegment === LONG_HEADER) return lsn - LONG_HEADER;
  if (inSegment > geometry.blockSize && inSegment % geometry.blockSize === SHORT_HEADER) {
    return lsn - SHORT_HEADER;
  }
  return lsn;
}
