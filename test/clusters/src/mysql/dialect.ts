// Replication SQL of the two flavours. MySQL 8.4+ speaks SOURCE/REPLICA and GTID sets with
// auto-positioning; MariaDB 10.11 speaks MASTER/SLAVE and domain-server-seq positions with
// MASTER_USE_GTID. Every provider (local processes, external URLs) drives a cluster through one
// of these, so the cluster code itself never spells a flavour's statement.

import { mariadbBeyond, mariadbCovers } from './mariadb-gtid.js';
import { literal, query, queryOne, scalar } from './sql.js';

export type MysqlFlavour = 'mysql' | 'mariadb';

/** Where a replica connects to. Replication runs as `user` with an empty password. */
export interface SourceAddress {
  readonly host: string;
  readonly port: number;
  readonly user: string;
}

export interface ReplicaStatus {
  /** The receiver (I/O thread): 'Yes', 'No' or 'Connecting'. */
  readonly receiver: string;
  /** The applier (SQL thread) runs. */
  readonly applier: boolean;
  readonly receiverErrno: number;
  readonly receiverError: string;
  readonly applierErrno: number;
  readonly applierError: string;
  /** Port of the source it is configured for. */
  readonly sourcePort: number;
  /** What it has received (MySQL Retrieved_Gtid_Set, MariaDB Gtid_IO_Pos). */
  readonly received: string;
}

export interface FollowOptions {
  /** Keep the applier stopped (the replica was paused): only the receiver starts. */
  applierStopped?: boolean;
  /** The node last ran as a primary; its own writes count as already applied (MariaDB). */
  wasPrimary?: boolean;
}

export interface ReplicationDialect {
  readonly flavour: MysqlFlavour;
  /** Server options that make a replica refuse writes from every client (the applier still applies). */
  readonly readOnlyOptions: readonly string[];
  /** Replica status, or undefined when the server is not configured as a replica. */
  status(url: string): Promise<ReplicaStatus | undefined>;
  /** (Re)point a replica at `source` with GTID positioning and start replicating. */
  follow(url: string, source: SourceAddress, options?: FollowOptions): Promise<void>;
  stopApplier(url: string): Promise<void>;
  startApplier(url: string): Promise<void>;
  /** Stop the receiver only (the applier goes on with what was received). */
  stopReceiver(url: string): Promise<void>;
  startReceiver(url: string): Promise<void>;
  /** Forget the source entirely and accept writes: the replica becomes a primary. */
  detach(url: string): Promise<void>;
  /** Make a server refuse (true) or accept (false) writes from every client. */
  setReadOnly(url: string, on: boolean): Promise<void>;
  /** Replication position as text: primary, what it wrote; replica, what it applied. */
  position(url: string, role: 'primary' | 'replica'): Promise<string>;
  /** Everything the server has committed, written or applied, as a position. */
  executed(url: string): Promise<string>;
  /** Wait on the server (up to timeoutMs) until it has applied `position`; false on timeout. */
  waitApplied(url: string, position: string, timeoutMs: number): Promise<boolean>;
  /** True when a replica has received or applied everything in `position`. */
  hasReceived(url: string, position: string): Promise<boolean>;
  /**
   * What of `position` (another node's executed()) this server has not committed, as text;
   * '' when it has it all. Anything else means that node has transactions this server never
   * had: their histories diverged.
   */
  lacking(url: string, position: string): Promise<string>;
  /** Connection ids of the threads that send the binary log to replicas. */
  senderThreads(url: string): Promise<number[]>;
}

function text(value: unknown): string {
  return value === null || value === undefined ? '' : String(value);
}

function int(value: unknown): number {
  const n = Number(value);
  return Number.isFinite(n) ? n : 0;
}

/** A GTID set as MySQL prints it, without the line breaks it puts after each UUID's comma. */
export function normaliseGtidSet(set: string): string {
  return set.replace(/\s+/g, '');
}

async function senderThreads(url: string): Promise<number[]> {
  const rows = await query(
    url,
    "SELECT ID AS id FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'",
  );
  return rows.map((r) => int(r['id']));
}

// Heartbeats every second and a one-second retry: a replica notices a stopped source and
// reconnects to a restarted one within about a second instead of a minute.
export const mysqlDialect: ReplicationDialect = {
  flavour: 'mysql',
  // super_read_only, not read_only: the harness and tests connect as root, which read_only
  // alone does not stop. Replication appliers are exempt from both.
  readOnlyOptions: ['--super-read-only=ON'],

  async status(url) {
    const rows = await query(url, 'SHOW REPLICA STATUS');
    const r = rows[0];
    if (!r) return undefined;
    return {
      receiver: text(r['Replica_IO_Running']),
      applier: text(r['Replica_SQL_Running']) === 'Yes',
      receiverErrno: int(r['Last_IO_Errno']),
      receiverError: text(r['Last_IO_Error']),
      applierErrno: int(r['Last_SQL_Errno']),
      applierError: text(r['Last_SQL_Error']),
      sourcePort: int(r['Source_Port']),
      received: normaliseGtidSet(text(r['Retrieved_Gtid_Set'])),
    };
  },

  async follow(url, source, options = {}) {
    await query(
      url,
      `STOP REPLICA;
       CHANGE REPLICATION SOURCE TO SOURCE_HOST=${literal(source.host)}, SOURCE_PORT=${source.port},
         SOURCE_USER=${literal(source.user)}, SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1,
         GET_SOURCE_PUBLIC_KEY=1, SOURCE_CONNECT_RETRY=1, SOURCE_RETRY_COUNT=100000,
         SOURCE_HEARTBEAT_PERIOD=1;
       START REPLICA${options.applierStopped ? ' IO_THREAD' : ''}`,
    );
  },

  async stopApplier(url) {
    await query(url, 'STOP REPLICA SQL_THREAD');
  },

  async startApplier(url) {
    await query(url, 'START REPLICA SQL_THREAD');
  },

  async stopReceiver(url) {
    await query(url, 'STOP REPLICA IO_THREAD');
  },

  async startReceiver(url) {
    await query(url, 'START REPLICA IO_THREAD');
  },

  async detach(url) {
    await query(
      url,
      'STOP REPLICA; RESET REPLICA ALL; SET GLOBAL super_read_only = OFF; SET GLOBAL read_only = OFF',
    );
  },

  async setReadOnly(url, on) {
    // super_read_only=ON implies read_only=ON; read_only=OFF implies super_read_only=OFF.
    await query(url, on ? 'SET GLOBAL super_read_only = ON' : 'SET GLOBAL read_only = OFF');
  },

  async position(url) {
    return this.executed(url);
  },

  async executed(url) {
    return normaliseGtidSet(await scalar(url, 'SELECT @@global.gtid_executed AS p'));
  },

  async waitApplied(url, position, timeoutMs) {
    if (position === '') return true;
    // A timeout of 0 would block forever; fractions of a second work.
    const seconds = Math.max(timeoutMs, 1) / 1000;
    const result = await scalar(
      url,
      `SELECT WAIT_FOR_EXECUTED_GTID_SET(${literal(position)}, ${seconds}) AS r`,
    );
    return result === '0';
  },

  async hasReceived(url, position) {
    if (position === '') return true;
    const status = await this.status(url);
    const received = status?.received ?? '';
    const row = await queryOne(
      url,
      `SELECT GTID_SUBSET(${literal(position)},
         CONCAT_WS(',', NULLIF(@@global.gtid_executed, ''), NULLIF(${literal(received)}, ''))) AS r`,
    );
    return int(row['r']) === 1;
  },

  async lacking(url, position) {
    if (position === '') return '';
    const missing = await scalar(
      url,
      `SELECT GTID_SUBTRACT(${literal(position)}, @@global.gtid_executed) AS r`,
    );
    return normaliseGtidSet(missing);
  },

  senderThreads,
};

export const mariadbDialect: ReplicationDialect = {
  flavour: 'mariadb',
  // Root keeps SUPER but not READ_ONLY ADMIN on these clusters (see the templates), so
  // read_only stops it; the harness's own admin account keeps READ_ONLY ADMIN.
  readOnlyOptions: ['--read-only=ON'],

  async status(url) {
    const rows = await query(url, 'SHOW SLAVE STATUS');
    const r = rows[0];
    if (!r) return undefined;
    return {
      receiver: text(r['Slave_IO_Running']),
      applier: text(r['Slave_SQL_Running']) === 'Yes',
      receiverErrno: int(r['Last_IO_Errno']),
      receiverError: text(r['Last_IO_Error']),
      applierErrno: int(r['Last_SQL_Errno']),
      applierError: text(r['Last_SQL_Error']),
      sourcePort: int(r['Master_Port']),
      received: text(r['Gtid_IO_Pos']),
    };
  },

  async follow(url, source, options = {}) {
    // A former primary's own writes are in its binlog but not in gtid_slave_pos; without this
    // it would ask the new primary for its own transactions again.
    const fromBinlog = options.wasPrimary
      ? 'SET GLOBAL gtid_slave_pos = @@global.gtid_binlog_pos;'
      : '';
    await query(
      url,
      `STOP SLAVE;
       ${fromBinlog}
       CHANGE MASTER TO MASTER_HOST=${literal(source.host)}, MASTER_PORT=${source.port},
         MASTER_USER=${literal(source.user)}, MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos,
         MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1;
       START SLAVE${options.applierStopped ? ' IO_THREAD' : ''}`,
    );
  },

  async stopApplier(url) {
    await query(url, 'STOP SLAVE SQL_THREAD');
  },

  async startApplier(url) {
    await query(url, 'START SLAVE SQL_THREAD');
  },

  async stopReceiver(url) {
    await query(url, 'STOP SLAVE IO_THREAD');
  },

  async startReceiver(url) {
    await query(url, 'START SLAVE IO_THREAD');
  },

  async detach(url) {
    await query(url, 'STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = OFF');
  },

  async setReadOnly(url, on) {
    await query(url, `SET GLOBAL read_only = ${on ? 'ON' : 'OFF'}`);
  },

  async position(url, role) {
    // A primary's writes are in its binlog position; a replica's gtid_slave_pos is what its
    // applier committed.
    const variable = role === 'primary' ? 'gtid_binlog_pos' : 'gtid_slave_pos';
    return scalar(url, `SELECT @@global.${variable} AS p`);
  },

  async executed(url) {
    return scalar(url, 'SELECT @@global.gtid_current_pos AS p');
  },

  async waitApplied(url, position, timeoutMs) {
    if (position === '') return true;
    // Timeout 0 returns at once; only a missing or negative one blocks forever.
    const seconds = Math.max(timeoutMs, 1) / 1000;
    const result = await scalar(
      url,
      `SELECT MASTER_GTID_WAIT(${literal(position)}, ${seconds}) AS r`,
    );
    return result === '0';
  },

  async hasReceived(url, position) {
    if (position === '') return true;
    const status = await this.status(url);
    const row = await queryOne(
      url,
      'SELECT @@global.gtid_slave_pos AS s, @@global.gtid_binlog_pos AS b',
    );
    return mariadbCovers([status?.received ?? '', text(row['s']), text(row['b'])], position);
  },

  async lacking(url, position) {
    // Sequence numbers only: a same-numbered GTID from another server is not caught here, but
    // the primary refuses such a replica itself (error 1236 under gtid_strict_mode).
    const row = await queryOne(
      url,
      'SELECT @@global.gtid_slave_pos AS s, @@global.gtid_binlog_pos AS b',
    );
    return mariadbBeyond([text(row['s']), text(row['b'])], position).join(',');
  },

  senderThreads,
};

export function dialectFor(flavour: MysqlFlavour): ReplicationDialect {
  return flavour === 'mysql' ? mysqlDialect : mariadbDialect;
}
