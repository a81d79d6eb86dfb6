import type { PositionCodec, PrimaryVerdict } from '@tidemark/core/adapter';
import type { SessionStateChanges } from './connection-tap.js';

/** The two databases behind the one adapter API. */
export type FlavourName = 'mysql' | 'mariadb';

/** What one probe of a replica found. */
export interface ReplicaFacts<P> {
  readonly applied: P;
  /** The node has a replication channel (false on a primary or a standalone server). */
  readonly replicating: boolean;
  /** The applier (SQL thread) is not running, so the replica will not catch up by itself. */
  readonly paused: boolean;
  /** The receiver (I/O thread) is connected to its source. */
  readonly receiving: boolean;
  /** Lag in seconds as the replica itself can tell it, when it can. */
  readonly ownLagSeconds: number | undefined;
}

/** What the adapter keeps from a probe of the primary, for the history verdicts. */
export interface PrimaryIdentity {
  /** MySQL: `@@server_uuid`, the UUID of the transactions the primary creates. */
  readonly serverUuid?: string;
  /** MariaDB: `@@server_id`, the server id in the GTIDs the primary creates. */
  readonly serverId?: number;
  /**
   * MySQL: the primary itself still applies transactions from another source (a replication
   * channel that runs and has something to apply), so a missing transaction may still arrive.
   */
  readonly stillApplying: boolean;
  /**
   * MariaDB: `@@gtid_binlog_state`, the last sequence number of every `domain-server` pair in the
   * primary's binary log. Absent when the server did not report it.
   */
  readonly lastSeqByServer?: ReadonlyMap<string, bigint> | undefined;
  /**
   * MariaDB: `log_slave_updates` is ON and `lastSeqByServer` holds every entry of the state, so
   * a pair it lacks was never logged (see `classifyMariadbAgainstPrimary`, rule 0b).
   */
  readonly binlogListsReplicated?: boolean | undefined;
  /** MariaDB: `@@gtid_slave_pos`, the last GTID the primary applied as a replica, per domain. */
  readonly slavePositionText?: string | undefined;
}

export interface PrimaryFacts<P> {
  readonly position: P;
  readonly identity: PrimaryIdentity;
}

/** A history verdict asked for before the primary was ever probed: the check fails (closed). */
export function primaryNotProbed(): Error {
  return new Error(
    'The primary has not been probed yet, so its identity is unknown and no history verdict can be given.',
  );
}

/**
 * Everything that differs between MySQL and MariaDB: SQL text, how positions travel in OK
 * packets, how probes read, and how the history verdict is reached. The adapter itself is shared.
 */
export interface Flavour<P> {
  readonly name: FlavourName;
  readonly codec: PositionCodec<P>;
  /**
   * Run once per write connection: turns on the session tracking that puts the committed
   * position into OK packets, and fails when the server cannot report positions at all.
   */
  readonly writeSetupSql: string;
  /** The error to throw when {@link Flavour.writeSetupSql} failed (the driver's error if unknown). */
  explainSetupFailure(error: unknown): unknown;
  /** The position one OK packet carries, or undefined when it carries none. */
  positionFromOk(changes: SessionStateChanges | undefined): P | undefined;
  /** One row, column `position`: the position applied on the node it runs on. */
  readonly positionSql: string;
  /** Parse a `position` column. */
  parsePosition(value: unknown): P;
  /** Probe SQL sends several statements (needs a `multipleStatements` pool). */
  readonly probeNeedsMultipleStatements: boolean;
  readonly probeSql: string;
  /** Read the rows of {@link Flavour.probeSql}. */
  parseProbe(rows: unknown): ReplicaFacts<P>;
  readonly primaryProbeSql: string;
  parsePrimaryProbe(rows: unknown): PrimaryFacts<P>;
  /**
   * Bounded server-side wait; bind parameters: the position's server text, the timeout in seconds.
   * One row: `waited` (the wait function's answer) and `position` (read after the wait).
   */
  readonly waitSql: string;
  /** The wait function's answer: true when reached, false on timeout; throws on anything else. */
  waitReached(value: unknown): boolean;
  /** Text the server's wait function accepts; contains no quotes or backslashes. */
  formatForServer(position: P): string;
  /** The rule behind the adapter's `classifyAgainstPrimary`. */
  classify(primary: P, required: P, identity: PrimaryIdentity | undefined): PrimaryVerdict;
}

/** The first row of a result, as a record. */
export function firstRow(rows: unknown, what: string): Record<string, unknown> {
  const row = Array.isArray(rows) ? rows[0] : undefined;
  if (row === null || typeof row !== 'object') throw new TypeError(`no row for ${what}`);
  return row as Record<string, unknown>;
}

/** A numeric column (mysql2 returns DECIMAL as text), or undefined for NULL and non-numbers. */
export function numberColumn(value: unknown): number | undefined {
  if (value === null || value === undefined) return undefined;
  const number = typeof value === 'number' ? value : Number(value);
  return Number.isFinite(number) ? number : undefined;
}

/** A text column (mysql2 may return Buffers for binary strings). */
export function textColumn(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}
