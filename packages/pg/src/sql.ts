/**
 * Every statement the adapter sends. Kept in one place so the round-trip budget is easy to audit:
 * each constant is one message to the server.
 */

/**
 * Position of a primary: the insert LSN (at or past the end of every acknowledged commit record,
 * even with synchronous_commit = off, unlike pg_current_wal_lsn(), the write position) and its
 * timeline. The timeline is the first 8 hex digits of the current WAL file name: immediate after a
 * promotion, where pg_control_checkpoint() lags until the next checkpoint.
 */
export const PRIMARY_POSITION_SQL =
  'SELECT pg_current_wal_insert_lsn()::text AS lsn, substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AS wal_tli';

/**
 * Commit and capture in ONE simple-query message: the server runs `COMMIT` first (transaction
 * control ends the implicit block), then the SELECT in a new transaction, and answers both in one
 * round trip. node-postgres returns one result per statement.
 */
export const COMMIT_AND_CAPTURE_SQL = `COMMIT; ${PRIMARY_POSITION_SQL}`;

/**
 * Capture for `transaction: false` writes, sent after the callback returned. Also says whether
 * the session is still inside a transaction that wrote something: the capture would then precede
 * the commit, which the adapter refuses (detected even on node-postgres versions that do not
 * report the transaction status).
 */
export const AUTOCOMMIT_CAPTURE_SQL = `${PRIMARY_POSITION_SQL}, pg_current_xact_id_if_assigned() IS NOT NULL AS in_transaction`;

/** Primary probe: position plus the server version (for feature detection) in one query. */
export const PRIMARY_PROBE_SQL = `${PRIMARY_POSITION_SQL}, current_setting('server_version_num')::int AS version_num`;

/**
 * What a read observed on a replica: the replayed LSN and the timeline it belongs to. A node that
 * was promoted (no longer in recovery) reports its insert position instead, since its replay LSN
 * froze at promotion. `received_tli` is NULL while the WAL receiver is disconnected (or the role
 * lacks pg_read_all_stats); `checkpoint_tli` is then a lower bound.
 */
const OBSERVED_COLUMNS = `pg_is_in_recovery() AS in_recovery,
  CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END::text AS lsn,
  CASE WHEN pg_is_in_recovery() THEN NULL ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END AS wal_tli,
  r.received_tli`;

/** The last restartpoint's timeline: read from the control file on disk, so only the probe asks. */
const NODE_POSITION_COLUMNS = `${OBSERVED_COLUMNS},
  (pg_control_checkpoint()).timeline_id AS checkpoint_tli`;

const RECEIVER_JOIN = 'FROM (SELECT 1) AS one LEFT JOIN pg_stat_wal_receiver AS r ON true';

export const NODE_POSITION_SQL = `SELECT ${NODE_POSITION_COLUMNS} ${RECEIVER_JOIN}`;

/**
 * A replica's position alone (`Adapter.observe`): the node position without
 * `pg_control_checkpoint()`. While the WAL receiver is down the timeline is then the last one
 * seen on the node (see rows.ts), which is never above the real one.
 */
export const OBSERVE_SQL = `SELECT ${OBSERVED_COLUMNS} ${RECEIVER_JOIN}`;

/**
 * One-query replica probe: position and timeline (as above), receive LSN, replay pause state, lag
 * in seconds (0 when everything received is replayed, else the age of the last replayed commit),
 * and the server version.
 */
export const REPLICA_PROBE_SQL = `SELECT ${NODE_POSITION_COLUMNS},
  pg_last_wal_receive_lsn()::text AS receive_lsn,
  CASE WHEN pg_is_in_recovery() THEN pg_get_wal_replay_pause_state() ELSE 'not paused' END AS pause_state,
  CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
       ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 END AS lag_seconds,
  current_setting('server_version_num')::int AS version_num
  ${RECEIVER_JOIN}`;

/** Contents of a timeline history file; $1 is a path built from an integer, never user text. */
export const READ_HISTORY_FILE_SQL = 'SELECT pg_read_file($1) AS content';

/** Path of the history file of `timeline`, relative to the data directory. */
export function historyFilePath(timeline: number): string {
  return `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
}

/** PostgreSQL 19 added WAIT FOR LSN. */
export const WAIT_FOR_LSN_MIN_VERSION = 190000;

const INLINE_LSN = /^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/;

/**
 * `WAIT FOR LSN` takes no bind parameters, so the LSN is inlined. `lsnText` must come from
 * formatLsn (a bigint, never user text); it is checked again here because this is where text
 * becomes SQL.
 */
export function waitForLsnSql(lsnText: string, timeoutMs: number): string {
  if (!INLINE_LSN.test(lsnText)) throw new Error(`Refusing to inline ${JSON.stringify(lsnText)}.`);
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
    throw new Error(`Refusing to inline timeout ${String(timeoutMs)}.`);
  }
  return `WAIT FOR LSN '${lsnText}' WITH (TIMEOUT '${timeoutMs}ms', NO_THROW)`;
}
