import type { QueryResult } from 'kysely';

/**
 * How one statement runs on a driver connection and what Kysely gets back: the same mapping as
 * Kysely's own PostgresDriver and MysqlDriver, on the connection the router leased.
 */
export type Execute = (
  connection: unknown,
  sql: string,
  parameters: readonly unknown[],
) => Promise<QueryResult<unknown>>;

/** node-postgres (`pg.PoolClient`). */
export const executePg: Execute = async (connection, sql, parameters) => {
  const client = connection as {
    query(
      sql: string,
      values: unknown[],
    ): Promise<{ command: string; rowCount: number | null; rows?: unknown[] }>;
  };
  const { command, rowCount, rows } = await client.query(sql, [...parameters]);
  const counted =
    command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
  return {
    ...(counted ? { numAffectedRows: BigInt(rowCount ?? 0) } : {}),
    rows: rows ?? [],
  };
};

/** mysql2 (a promise connection, as `@tidemark/mysql` hands to callbacks). */
export const executeMysql: Execute = async (connection, sql, parameters) => {
  const client = connection as {
    query(sql: string, values: unknown[]): Promise<[unknown, unknown]>;
  };
  const [result] = await client.query(sql, [...parameters]);
  if (isOkPacket(result)) {
    const { insertId, affectedRows, changedRows } = result;
    return {
      ...(insertId !== undefined && insertId !== null && insertId.toString() !== '0'
        ? { insertId: BigInt(insertId) }
        : {}),
      ...(affectedRows !== undefined && affectedRows !== null
        ? { numAffectedRows: BigInt(affectedRows) }
        : {}),
      ...(changedRows !== undefined && changedRows !== null
        ? { numChangedRows: BigInt(changedRows) }
        : {}),
      rows: [],
    };
  }
  return { rows: Array.isArray(result) ? result : [] };
};

function isOkPacket(value: unknown): value is {
  insertId?: number | bigint | null;
  affectedRows?: number | null;
  changedRows?: number | null;
} {
  return (
    typeof value === 'object' && value !== null && 'insertId' in value && 'affectedRows' in value
  );
}
