import mysql, { type PoolConnection, type RowDataPacket } from 'mysql2/promise';
import type { NodePool } from '../types.js';

/**
 * A small pool: the workload is sequential, so two connections per server are plenty and keep
 * the demo light on a shared machine. `connectionLimit` is for the end-to-end benchmark (mysql2's
 * own default is 10).
 */
export function smallMysqlPool(url: string, connectionLimit = 2): NodePool<PoolConnection> {
  const pool = mysql.createPool({ uri: url, connectionLimit });
  // mysql2 removes a broken pooled connection on its first 'error'; a second one (a server going
  // away during teardown) must not crash the process. Queries in flight still reject.
  pool.on('connection', (connection) => {
    connection.on('error', () => undefined);
  });
  return {
    async use(fn) {
      const connection = await pool.getConnection();
      try {
        return await fn(connection);
      } finally {
        connection.release();
      }
    },
    end: () => pool.end(),
  };
}

/** Open one connection to `url`, run `fn`, close it. For setup and cluster control. */
export async function withMysqlConnection<T>(
  url: string,
  fn: (connection: mysql.Connection) => Promise<T>,
): Promise<T> {
  const connection = await mysql.createConnection({ uri: url });
  connection.on('error', () => undefined);
  try {
    return await fn(connection);
  } finally {
    await connection.end().catch(() => connection.destroy());
  }
}

/** The rows of one statement, as plain records. */
export async function queryRows(
  connection: mysql.Connection | PoolConnection,
  sql: string,
  values: unknown[] = [],
): Promise<Record<string, unknown>[]> {
  const [rows] = await connection.query<RowDataPacket[]>(sql, values as mysql.QueryValues);
  return rows;
}
