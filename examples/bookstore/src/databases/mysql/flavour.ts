import type mysql from 'mysql2/promise';
import type { PoolConnection } from 'mysql2/promise';
import type { DbName, LabPositions, NodePool, ReplicaSample } from '../types.js';
import {
  type LabGtidSet,
  type LabMariadbPosition,
  labGtidSubset,
  labMariadbCovers,
  parseLabGtidSet,
  parseLabMariadbPosition,
} from './lab-gtid.js';
import { queryRows } from './pool.js';

type Connection = mysql.Connection | PoolConnection;

/**
 * Everything that differs between MySQL and MariaDB in the demo: replication control, the
 * position the demo waits for between runs, and the lab router's sample. The orders SQL is the
 * same for both (orders.ts).
 */
export interface MysqlFamilyFlavour {
  readonly db: Extract<DbName, 'mysql' | 'mariadb'>;
  /** Harness target of the local cluster. */
  readonly target: 'mysql97' | 'mariadb1011';
  /** "MySQL" or "MariaDB". */
  readonly product: string;
  /** True when `SELECT VERSION()` text belongs to this flavour. */
  matchesVersion(version: string): boolean;
  /** `SHOW REPLICA STATUS` / `SHOW SLAVE STATUS`. */
  readonly replicaStatusSql: string;
  /** Column of that status saying whether the applier (SQL thread) runs ('Yes'). */
  readonly applierRunningColumn: string;
  readonly stopApplierSql: string;
  readonly startApplierSql: string;
  /** Privilege the paused scenario needs in --replica-url. */
  readonly applierPrivilege: string;
  /** Privilege the status checks need. */
  readonly statusPrivilege: string;
  /** Everything the primary has committed, as position text. */
  primaryPosition(connection: Connection): Promise<string>;
  /** Wait on the replica up to `seconds` for `position`; true when it has applied it. */
  waitApplied(connection: Connection, position: string, seconds: number): Promise<boolean>;
  /** The server-side wait Tidemark's adapter uses, for the header. */
  readonly tidemarkWait: string;
  readonly lab: LabPositions<PoolConnection, unknown>;
}

// Lag from the applier's own timestamps: the age of the last applied transaction's original
// commit, but 0 when everything received has been applied (as the PostgreSQL lab router does
// with its replay timestamp). performance_schema fills these tables even with it OFF (9.7).
const MYSQL_SAMPLE_SQL = `
SELECT @@global.gtid_executed AS applied,
       GTID_SUBSET(c.RECEIVED_TRANSACTION_SET, @@global.gtid_executed) AS all_applied,
       TIMESTAMPDIFF(MICROSECOND,
         (SELECT MAX(w.LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP)
            FROM performance_schema.replication_applier_status_by_worker w
           WHERE w.CHANNEL_NAME = ''),
         NOW(6)) / 1000000 AS since_last_applied
  FROM performance_schema.replication_connection_status c
 WHERE c.CHANNEL_NAME = ''`;

const mysqlLab: LabPositions<PoolConnection, LabGtidSet> = {
  rule: "its applied GTID set contains the session's last write (GTID_SUBSET)",
  async afterWrite(connection) {
    // gtid_executed right after the commit, on the same connection: it contains the write (and,
    // with one writer at a time as here, nothing newer), as the insert LSN does on PostgreSQL.
    const [row] = await queryRows(connection, 'SELECT @@global.gtid_executed AS executed');
    return parseLabGtidSet(String(row?.['executed'] ?? ''));
  },
  sample: (replica: NodePool<PoolConnection>) =>
    replica.use(async (connection): Promise<ReplicaSample<LabGtidSet> | undefined> => {
      const [row] = await queryRows(connection, MYSQL_SAMPLE_SQL);
      // No row: not configured as a replica, so no position to trust.
      if (!row) return undefined;
      const since = row['since_last_applied'];
      const lagSeconds = Number(row['all_applied']) === 1 ? 0 : since == null ? 0 : Number(since);
      return { applied: parseLabGtidSet(String(row['applied'] ?? '')), lagSeconds };
    }),
  covers: (applied, required) => labGtidSubset(required, applied),
};

const mariadbLab: LabPositions<PoolConnection, LabMariadbPosition> = {
  rule: "its gtid_slave_pos has reached the session's last write GTID (@@last_gtid) in its domain",
  async afterWrite(connection) {
    // The GTID this session committed last: exactly the write just acknowledged.
    const [row] = await queryRows(connection, 'SELECT @@last_gtid AS gtid');
    return parseLabMariadbPosition(String(row?.['gtid'] ?? ''));
  },
  sample: (replica: NodePool<PoolConnection>) =>
    replica.use(async (connection): Promise<ReplicaSample<LabMariadbPosition> | undefined> => {
      const [position] = await queryRows(connection, 'SELECT @@global.gtid_slave_pos AS applied');
      const [status] = await queryRows(connection, 'SHOW SLAVE STATUS');
      if (!status) return undefined;
      // Seconds_Behind_Master is NULL while the SQL thread is stopped: unknown, not 0.
      const behind = status['Seconds_Behind_Master'];
      return {
        applied: parseLabMariadbPosition(String(position?.['applied'] ?? '')),
        lagSeconds: behind == null ? undefined : Number(behind),
      };
    }),
  covers: (applied, required) => labMariadbCovers(applied, required),
};

async function scalar(connection: Connection, sql: string, values: unknown[]): Promise<unknown> {
  const [row] = await queryRows(connection, sql, values);
  return row ? Object.values(row)[0] : undefined;
}

export const MYSQL: MysqlFamilyFlavour = {
  db: 'mysql',
  target: 'mysql97',
  product: 'MySQL',
  matchesVersion: (version) => !/mariadb/i.test(version),
  replicaStatusSql: 'SHOW REPLICA STATUS',
  applierRunningColumn: 'Replica_SQL_Running',
  stopApplierSql: 'STOP REPLICA SQL_THREAD',
  startApplierSql: 'START REPLICA SQL_THREAD',
  applierPrivilege: 'REPLICATION_SLAVE_ADMIN (or SUPER)',
  statusPrivilege: 'REPLICATION CLIENT',
  primaryPosition: async (connection) =>
    String(await scalar(connection, 'SELECT @@global.gtid_executed', [])),
  // WAIT_FOR_EXECUTED_GTID_SET: 0 when applied, 1 on timeout (a timeout of 0 would block forever).
  waitApplied: async (connection, position, seconds) =>
    Number(
      await scalar(connection, 'SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)', [
        position,
        Math.max(0.001, seconds),
      ]),
    ) === 0,
  tidemarkWait: 'server-side WAIT_FOR_EXECUTED_GTID_SET',
  lab: mysqlLab,
};

export const MARIADB: MysqlFamilyFlavour = {
  db: 'mariadb',
  target: 'mariadb1011',
  product: 'MariaDB',
  matchesVersion: (version) => /mariadb/i.test(version),
  replicaStatusSql: 'SHOW SLAVE STATUS',
  applierRunningColumn: 'Slave_SQL_Running',
  stopApplierSql: 'STOP SLAVE SQL_THREAD',
  startApplierSql: 'START SLAVE SQL_THREAD',
  applierPrivilege: 'REPLICATION SLAVE ADMIN (or SUPER)',
  statusPrivilege: 'SLAVE MONITOR (or REPLICATION CLIENT before 10.5)',
  primaryPosition: async (connection) =>
    String(await scalar(connection, 'SELECT @@global.gtid_binlog_pos', [])),
  // MASTER_GTID_WAIT: 0 when reached, -1 on timeout; it waits on gtid_slave_pos (replicas only).
  waitApplied: async (connection, position, seconds) =>
    Number(
      await scalar(connection, 'SELECT MASTER_GTID_WAIT(?, ?)', [
        position,
        Math.max(0.001, seconds),
      ]),
    ) === 0,
  tidemarkWait: 'server-side MASTER_GTID_WAIT',
  lab: mariadbLab,
};
