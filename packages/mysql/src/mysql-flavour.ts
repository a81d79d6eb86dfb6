import type { PrimaryVerdict } from '@tidemark/core/adapter';
import { classifyAgainstPrimary, createMysqlCodec } from './codec.js';
import { MysqlAdapterError, MysqlErrorCode } from './errors.js';
import {
  type Flavour,
  firstRow,
  numberColumn,
  primaryNotProbed,
  type ReplicaFacts,
  textColumn,
} from './flavour.js';
import { GtidSet } from './gtid-set.js';
import { memoizeParse } from './parse-cache.js';

/** The value session_track_gtids is set to when gtid_mode is not ON, so the SET fails. */
const GTID_MODE_OFF_MARKER = 'GTID_MODE_IS_NOT_ON';

/**
 * `OWN_GTID`: the OK packet of a statement that commits carries the GTIDs of the transactions it
 * committed, so capturing a write's position costs nothing extra. Guarded: without gtid_mode = ON
 * there are no GTIDs, every write would look like it wrote nothing, and reads could be stale.
 */
const WRITE_SETUP_SQL = `SET SESSION session_track_gtids = IF(@@global.gtid_mode = 'ON', 'OWN_GTID', '${GTID_MODE_OFF_MARKER}')`;

const POSITION_SQL = 'SELECT @@global.gtid_executed AS position';

/**
 * One query per replica, all from performance_schema's replication tables (populated even with
 * performance_schema = OFF; measured on 9.7):
 * - `applier_state`: `replication_applier_status.SERVICE_STATE`, OFF while the SQL thread is
 *   stopped. No row: the node replicates from nobody.
 * - `received_applied`: everything the receiver queued is applied (`GTID_SUBSET` server-side, so
 *   the client parses one set, not two).
 * - `applying_lag`: age of the oldest transaction a worker is applying, from its original commit
 *   timestamp on the source (the replica's clock against the source's: skew adds to it).
 * - `queued_lag`: age of the last transaction the receiver queued, when nothing is being applied.
 *
 * Only the default channel ('') is read; multi-source channels are not supported.
 */
const PROBE_SQL = `SELECT @@global.gtid_executed AS position,
  a.SERVICE_STATE AS applier_state,
  c.SERVICE_STATE AS receiver_state,
  GTID_SUBSET(c.RECEIVED_TRANSACTION_SET, @@global.gtid_executed) AS received_applied,
  (SELECT UNIX_TIMESTAMP(NOW(6)) - UNIX_TIMESTAMP(MIN(w.APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP))
     FROM performance_schema.replication_applier_status_by_worker AS w
    WHERE w.CHANNEL_NAME = '' AND w.APPLYING_TRANSACTION <> '') AS applying_lag,
  UNIX_TIMESTAMP(NOW(6)) - NULLIF(UNIX_TIMESTAMP(c.LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP), 0) AS queued_lag
FROM (SELECT 1) AS one
LEFT JOIN performance_schema.replication_applier_status AS a ON a.CHANNEL_NAME = ''
LEFT JOIN performance_schema.replication_connection_status AS c ON c.CHANNEL_NAME = ''`;

/**
 * The primary's position, its UUID (for the history verdict) and whether it still applies
 * transactions from elsewhere: a channel whose applier runs and whose receiver is connected or
 * has queued transactions not applied yet. Then a missing transaction may still arrive.
 */
const PRIMARY_PROBE_SQL = `SELECT @@global.gtid_executed AS position, @@global.server_uuid AS server_uuid,
  (SELECT COUNT(*) FROM performance_schema.replication_applier_status AS a
     JOIN performance_schema.replication_connection_status AS c ON c.CHANNEL_NAME = a.CHANNEL_NAME
    WHERE a.SERVICE_STATE = 'ON'
      AND (c.SERVICE_STATE = 'ON' OR NOT GTID_SUBSET(c.RECEIVED_TRANSACTION_SET, @@global.gtid_executed))) AS still_applying`;

/**
 * `WAIT_FOR_EXECUTED_GTID_SET(set, seconds)`: 0 once applied, 1 after the timeout. The set's
 * `gtid_executed` is read in the same statement, after the wait (select-list order; measured on
 * 9.7: the value read after a 1 s wait included the awaited set).
 */
const WAIT_SQL =
  'SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?) AS waited, @@global.gtid_executed AS position';

/** MySQL 8.0.17+ with gtid_mode = ON: positions are GTID sets. */
export function createMysqlFlavour(): Flavour<GtidSet> {
  // GtidSet is immutable, so one parsed set can be handed out many times.
  const parseText = memoizeParse((text) => GtidSet.parse(text));
  const parseGtidSet = (value: unknown): GtidSet => {
    const text = textColumn(value);
    if (text === undefined) throw new TypeError(`GTID set column is ${String(value)}`);
    return parseText(text);
  };
  return {
    name: 'mysql',
    codec: createMysqlCodec(),
    writeSetupSql: WRITE_SETUP_SQL,
    explainSetupFailure(error) {
      const message = error instanceof Error ? error.message : '';
      if (!message.includes(GTID_MODE_OFF_MARKER)) return error;
      return new MysqlAdapterError(
        MysqlErrorCode.PositionsUnavailable,
        'The primary does not run with gtid_mode = ON, so writes have no GTIDs and Tidemark cannot tell which replicas have them. Enable GTIDs (gtid_mode = ON, enforce_gtid_consistency = ON) on every node.',
        { cause: error },
      );
    },
    positionFromOk(changes) {
      const parts = changes?.gtids;
      if (!Array.isArray(parts) || parts.length === 0) return undefined;
      // mysql2 splits the set's text at commas; later parts start with "\n", which parse() skips.
      const text = parts.join(',');
      return text.trim() === '' ? undefined : GtidSet.parse(text);
    },
    positionSql: POSITION_SQL,
    parsePosition: parseGtidSet,
    probeNeedsMultipleStatements: false,
    probeSql: PROBE_SQL,
    parseProbe(rows): ReplicaFacts<GtidSet> {
      const row = firstRow(rows, 'the replica probe');
      const applied = parseGtidSet(row['position']);
      const applierState = textColumn(row['applier_state']);
      if (applierState === undefined) {
        return { applied, replicating: false, paused: false, receiving: false, ownLagSeconds: 0 };
      }
      const applyingLag = numberColumn(row['applying_lag']);
      const queuedLag = numberColumn(row['queued_lag']);
      let ownLagSeconds: number | undefined;
      if (applyingLag !== undefined) ownLagSeconds = Math.max(0, applyingLag);
      else if (numberColumn(row['received_applied']) === 1) ownLagSeconds = 0;
      else if (queuedLag !== undefined) ownLagSeconds = Math.max(0, queuedLag);
      return {
        applied,
        replicating: true,
        paused: applierState !== 'ON',
        receiving: textColumn(row['receiver_state']) === 'ON',
        ownLagSeconds,
      };
    },
    primaryProbeSql: PRIMARY_PROBE_SQL,
    parsePrimaryProbe(rows) {
      const row = firstRow(rows, 'the primary probe');
      const serverUuid = textColumn(row['server_uuid']);
      if (serverUuid === undefined) throw new TypeError('no server_uuid');
      return {
        position: parseGtidSet(row['position']),
        identity: { serverUuid, stillApplying: (numberColumn(row['still_applying']) ?? 0) > 0 },
      };
    },
    waitSql: WAIT_SQL,
    waitReached(value) {
      const answer = numberColumn(value);
      if (answer === 0) return true;
      if (answer === 1) return false;
      throw new TypeError(`WAIT_FOR_EXECUTED_GTID_SET answered ${String(value)}`);
    },
    formatForServer: (position) => position.format({ separator: ',' }),
    classify(primary, required, identity): PrimaryVerdict {
      // Without the primary's UUID nothing can be decided: fail closed (the caller maps a thrown
      // check to "unverified", never to "ok").
      if (identity?.serverUuid === undefined) throw primaryNotProbed();
      const verdict = classifyAgainstPrimary(primary, required, identity.serverUuid);
      // A transaction still on its way to the primary is not lost yet.
      if (verdict === 'other-history' && identity.stillApplying) return 'ok';
      return verdict;
    },
  };
}
