// Connections for every MySQL/MariaDB provider: one short-lived connection per call (a node that
// was killed and restarted needs no pool repair), multiple statements allowed, rows of the last
// statement returned. Nothing here knows about replication.

import mysql, { type FieldPacket, type QueryResult } from 'mysql2/promise';
import { pollUntilAccepting, redact, type WaitOptions } from '../accepting.js';

/** A row as mysql2 returns it: column name to value. */
export type Row = Record<string, unknown>;

/**
 * mysql2 answers a multi-statement text with one result per statement and one `fields` entry per
 * statement (an array, or undefined for a statement without a result set); a single SELECT has
 * plain field descriptions there instead.
 */
function lastResult(result: QueryResult, fields: FieldPacket[] | undefined): unknown[] {
  const perStatement =
    Array.isArray(fields) &&
    fields.length > 0 &&
    (fields[0] === undefined || Array.isArray(fields[0]));
  const last: unknown = perStatement && Array.isArray(result) ? result[result.length - 1] : result;
  // A statement without a result set (INSERT, SET, ...) gives a ResultSetHeader: no rows.
  return Array.isArray(last) ? (last as unknown[]) : [];
}

/** Run SQL on one server; rows of the last statement when the text holds several. */
export async function query(url: string, sql: string, connectTimeoutMs = 5_000): Promise<Row[]> {
  const connection = await mysql.createConnection({
    uri: url,
    multipleStatements: true,
    connectTimeout: connectTimeoutMs,
  });
  // A server killed under an open connection emits 'error' on it; without a listener that
  // would crash the test process.
  connection.on('error', () => {});
  try {
    const [result, fields] = await connection.query(sql);
    return lastResult(result, fields) as Row[];
  } finally {
    await connection.end().catch(() => connection.destroy());
  }
}

export async function queryOne(url: string, sql: string): Promise<Row> {
  const rows = await query(url, sql);
  const row = rows[0];
  if (!row) throw new Error(`no row from: ${sql}`);
  return row;
}

/** The single value of a one-row, one-column query, as text ('' for NULL). */
export async function scalar(url: string, sql: string): Promise<string> {
  const row = await queryOne(url, sql);
  const value = Object.values(row)[0];
  return value === null || value === undefined ? '' : String(value);
}

/** Poll until the server accepts a connection and answers a query. */
export function waitUntilAccepting(url: string, options: WaitOptions = {}): Promise<void> {
  return pollUntilAccepting(url, (u) => query(u, 'SELECT 1', 2_000), options);
}

/** Quote a value as an SQL string literal (for statements that take no placeholders). */
export function literal(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

export { redact, type WaitOptions };
