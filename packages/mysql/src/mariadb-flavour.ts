import type { PrimaryVerdict } from '@tidemark/core/adapter';
import { MysqlAdapterError, MysqlErrorCode } from './errors.js';
import {
  type Flavour,
  firstRow,
  numberColumn,
  type PrimaryIdentity,
  primaryNotProbed,
  type ReplicaFacts,
  textColumn,
} from './flavour.js';
import { isWholeBinlogState, parseBinlogState } from './mariadb-binlog-state.js';
import { classifyMariadbAgainstPrimary, type MariadbClassifyOptions } from './mariadb-classify.js';
import { createMariadbCodec } from './mariadb-codec.js';
import { type MariadbCompareOptions, MariadbGtidPosition } from './mariadb-gtid.js';
import { memoizeParse } from './parse-cache.js';

/** Name of the variable the SET falls back to without a binary log, so the SET fails. */
const BINLOG_OFF_MARKER = 'tidemark_binary_log_is_off';

/**
 * MariaDB has no session_track_gtids; tracking the session variable `last_gtid` puts the GTID of
 * the session's last commit into the OK packet of the committing statement. The variables already
 * tracked stay tracked (mysql2 follows character_set_client changes through them). Guarded:
 * without a binary log there are no GTIDs.
 */
const WRITE_SETUP_SQL = `SET SESSION session_track_system_variables = IF(@@global.log_bin, CONCAT(@@session.session_track_system_variables, ',last_gtid'), '${BINLOG_OFF_MARKER}')`;

/**
 * `gtid_current_pos` is right on every role (measured on 10.11): on a replica it equals
 * `gtid_slave_pos` (what the SQL thread applied), on a primary it is the last GTID written per
 * domain, and on a replica promoted without log_slave_updates it is correct where
 * `gtid_binlog_pos` still showed an older GTID and `gtid_slave_pos` misses the new writes.
 */
const POSITION_SQL = 'SELECT @@global.gtid_current_pos AS position';

/**
 * Two statements, one round trip: the applied position, then the replication status
 * (`Slave_SQL_Running`, `Slave_IO_Running`, `Seconds_Behind_Master`, `Gtid_IO_Pos`). MariaDB's
 * performance_schema replication tables stay empty unless performance_schema is ON, and it has
 * no per-transaction commit timestamps, so the status is the only source. Default connection only.
 */
const PROBE_SQL = `${POSITION_SQL}; SHOW SLAVE STATUS`;

/**
 * `gtid_binlog_state` lists the last GTID of every (domain, server) pair in the primary's binary
 * log: it tells a transaction of a former primary that reached this one from one that never did,
 * which the one-GTID-per-domain position cannot once the new primary's sequence has moved past it.
 */
const PRIMARY_PROBE_SQL =
  'SELECT @@global.gtid_current_pos AS position, @@global.server_id AS server_id, @@global.gtid_binlog_state AS binlog_state, @@global.log_slave_updates AS logs_replicated, @@global.gtid_slave_pos AS slave_pos';

/**
 * `MASTER_GTID_WAIT(pos, seconds)`: 0 once reached, -1 after the timeout. It compares with
 * gtid_slave_pos (so it is for replicas only). The position is read after the wait in the same
 * statement (measured on 10.11).
 */
const WAIT_SQL = 'SELECT MASTER_GTID_WAIT(?, ?) AS waited, @@global.gtid_current_pos AS position';

/** MariaDB 10.5+ with a binary log: positions are GTID positions (one GTID per domain). */
export function createMariadbFlavour(
  options: MariadbCompareOptions = {},
): Flavour<MariadbGtidPosition> {
  const compareOptions: MariadbCompareOptions = { strictMode: options.strictMode ?? true };
  const codec = createMariadbCodec(compareOptions);
  const parseText = memoizeParse((text) => MariadbGtidPosition.parse(text));
  const parsePosition = (value: unknown): MariadbGtidPosition => {
    const text = textColumn(value);
    if (text === undefined) throw new TypeError(`GTID position column is ${String(value)}`);
    return parseText(text);
  };
  // An unreadable gtid_slave_pos only takes away an exception to rule 0b (never a verdict of ok).
  const parseOptional = (text: string | undefined): MariadbGtidPosition | undefined => {
    if (text === undefined) return undefined;
    try {
      return parseText(text);
    } catch {
      return undefined;
    }
  };
  // One options object per primary probe, not one per verdict.
  const optionsByIdentity = new WeakMap<PrimaryIdentity, MariadbClassifyOptions>();
  const classifyOptions = (identity: PrimaryIdentity): MariadbClassifyOptions => {
    let options = optionsByIdentity.get(identity);
    if (options === undefined) {
      options = {
        ...compareOptions,
        lastSeqByServer: identity.lastSeqByServer,
        binlogListsReplicated: identity.binlogListsReplicated,
        slavePosition: parseOptional(identity.slavePositionText),
      };
      optionsByIdentity.set(identity, options);
    }
    return options;
  };
  return {
    name: 'mariadb',
    codec,
    writeSetupSql: WRITE_SETUP_SQL,
    explainSetupFailure(error) {
      const message = error instanceof Error ? error.message : '';
      if (!message.includes(BINLOG_OFF_MARKER)) return error;
      return new MysqlAdapterError(
        MysqlErrorCode.PositionsUnavailable,
        'The primary runs without a binary log (log_bin is OFF), so writes have no GTIDs and Tidemark cannot tell which replicas have them. Start it with log-bin.',
        { cause: error },
      );
    },
    positionFromOk(changes) {
      const text = changes?.systemVariables?.['last_gtid'];
      if (typeof text !== 'string' || text.trim() === '') return undefined;
      return MariadbGtidPosition.parse(text);
    },
    positionSql: POSITION_SQL,
    parsePosition,
    probeNeedsMultipleStatements: true,
    probeSql: PROBE_SQL,
    parseProbe(rows): ReplicaFacts<MariadbGtidPosition> {
      if (!Array.isArray(rows) || rows.length !== 2) {
        throw new TypeError('the probe did not return two results');
      }
      const applied = parsePosition(firstRow(rows[0], 'the position')['position']);
      const status = Array.isArray(rows[1]) ? (rows[1][0] as Record<string, unknown>) : undefined;
      if (status === undefined) {
        return { applied, replicating: false, paused: false, receiving: false, ownLagSeconds: 0 };
      }
      const paused = textColumn(status['Slave_SQL_Running']) !== 'Yes';
      const receivedText = textColumn(status['Gtid_IO_Pos']) ?? '';
      const received = parseText(receivedText);
      const caughtUp = codec.compare(applied, received) === 'covered';
      const behindMaster = numberColumn(status['Seconds_Behind_Master']);
      return {
        applied,
        replicating: true,
        paused,
        receiving: textColumn(status['Slave_IO_Running']) === 'Yes',
        // Seconds_Behind_Master is NULL while the SQL thread is stopped.
        ownLagSeconds: caughtUp ? 0 : paused ? undefined : behindMaster,
      };
    },
    primaryProbeSql: PRIMARY_PROBE_SQL,
    parsePrimaryProbe(rows) {
      const row = firstRow(rows, 'the primary probe');
      const serverId = numberColumn(row['server_id']);
      if (serverId === undefined) throw new TypeError('no server_id');
      // MariaDB's verdict assumes the primary replicates from nobody (not checked: see README).
      const binlogState = textColumn(row['binlog_state']);
      const slavePositionText = textColumn(row['slave_pos']);
      return {
        position: parsePosition(row['position']),
        identity: {
          serverId,
          stillApplying: false,
          ...(binlogState === undefined ? {} : { lastSeqByServer: parseBinlogState(binlogState) }),
          binlogListsReplicated:
            binlogState !== undefined &&
            isWholeBinlogState(binlogState) &&
            numberColumn(row['logs_replicated']) === 1,
          ...(slavePositionText === undefined ? {} : { slavePositionText }),
        },
      };
    },
    waitSql: WAIT_SQL,
    waitReached(value) {
      const answer = numberColumn(value);
      if (answer === 0) return true;
      if (answer === -1) return false;
      throw new TypeError(`MASTER_GTID_WAIT answered ${String(value)}`);
    },
    formatForServer: (position) => position.format(),
    classify(primary, required, identity): PrimaryVerdict {
      if (identity?.serverId === undefined) throw primaryNotProbed();
      return classifyMariadbAgainstPrimary(
        primary,
        required,
        identity.serverId,
        classifyOptions(identity),
      );
    },
  };
}
