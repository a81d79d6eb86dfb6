import type {
  ExecuteValues,
  FieldPacket,
  PoolConnection,
  QueryOptions,
  ResultSetHeader,
} from 'mysql2/promise';

/**
 * The `mariadb` driver's result shape, as `@prisma/adapter-mariadb` reads it, made from a mysql2
 * connection's results. That adapter keeps its own type mapping, argument conversion and error
 * mapping; it only needs the statements to come back as the `mariadb` driver returns them:
 * rows as arrays carrying a `meta` array of column objects, or an OK packet.
 */

/** A statement as `@prisma/adapter-mariadb` sends it to `query` or `execute`. */
export interface MariaDbRequest {
  readonly sql: string;
  readonly rowsAsArray?: boolean;
}

/** A column as the `mariadb` driver describes it, reduced to what Prisma's adapter reads. */
export interface MariaDbColumn {
  /** The `mariadb` driver's name of the wire type (`INT` for 3, `BIGINT` for 8, ...). */
  readonly type: string;
  readonly flags: number;
  readonly collation: { readonly index: number };
  /** MariaDB's extended type format (`json` for a JSON column, sent as LONGTEXT). */
  readonly dataTypeFormat: string | undefined;
  name(): string;
}

export type MariaDbRows = unknown[][] & { meta: MariaDbColumn[] };

export interface MariaDbOkPacket {
  readonly affectedRows: number;
  readonly insertId: bigint;
  readonly warningStatus: number;
}

export type MariaDbResult = MariaDbRows | MariaDbOkPacket;

/**
 * The `mariadb` driver's names of the MySQL wire types (its `FieldType` constants): they differ
 * from mysql2's for 3 (`INT`, mysql2 `LONG`) and 8 (`BIGINT`, mysql2 `LONGLONG`), and Prisma's
 * adapter maps by these names.
 */
const MARIADB_TYPE_NAMES: Readonly<Record<number, string>> = {
  0: 'DECIMAL',
  1: 'TINY',
  2: 'SHORT',
  3: 'INT',
  4: 'FLOAT',
  5: 'DOUBLE',
  6: 'NULL',
  7: 'TIMESTAMP',
  8: 'BIGINT',
  9: 'INT24',
  10: 'DATE',
  11: 'TIME',
  12: 'DATETIME',
  13: 'YEAR',
  14: 'NEWDATE',
  15: 'VARCHAR',
  16: 'BIT',
  17: 'TIMESTAMP2',
  18: 'DATETIME2',
  19: 'TIME2',
  245: 'JSON',
  246: 'NEWDECIMAL',
  247: 'ENUM',
  248: 'SET',
  249: 'TINY_BLOB',
  250: 'MEDIUM_BLOB',
  251: 'LONG_BLOB',
  252: 'BLOB',
  253: 'VAR_STRING',
  254: 'STRING',
  255: 'GEOMETRY',
};

/** mysql2's column definition, with the fields its typings leave out. */
type Mysql2Column = FieldPacket & {
  readonly columnType?: number;
  readonly characterSet?: number;
  readonly extendedFormat?: string;
};

function columnOf(field: Mysql2Column): MariaDbColumn {
  const code = field.columnType ?? field.type ?? -1;
  const name = field.name;
  return {
    // An unknown code keeps its number: Prisma's adapter then says which type it cannot map.
    type: MARIADB_TYPE_NAMES[code] ?? String(code),
    flags: Number(field.flags ?? 0),
    collation: { index: field.characterSet ?? 0 },
    dataTypeFormat: field.extendedFormat,
    name: () => name,
  };
}

/** What mysql2's `typeCast` hands over for a column (`type` in mysql2's names). */
interface CastField {
  readonly type: string;
  readonly extendedFormat?: string;
  string(encoding?: string): string | null;
  buffer(): Buffer | null;
}

/**
 * Values as the `mariadb` driver returns them under Prisma's options (`jsonStrings`,
 * `GEOMETRY` as bytes): mysql2 would parse JSON (its `jsonStrings` is a pool setting, not a
 * statement one) and decode geometry into points.
 */
function castLikeMariaDb(field: CastField, next: () => unknown): unknown {
  if (field.type === 'JSON' || field.extendedFormat === 'json') return field.string('utf8');
  if (field.type === 'GEOMETRY') return field.buffer();
  return next();
}

/**
 * Run one statement of Prisma's adapter on a mysql2 connection and return it in the `mariadb`
 * driver's shape: dates as strings, BIGINT as strings (the `mariadb` driver's BigInt, which
 * Prisma's adapter turns into a string), DECIMAL as strings, bytes as Buffers.
 */
export async function runAsMariaDb(
  connection: PoolConnection,
  protocol: 'query' | 'execute',
  request: MariaDbRequest,
  values: readonly unknown[] | undefined,
): Promise<MariaDbResult> {
  const options: QueryOptions = {
    sql: request.sql,
    rowsAsArray: request.rowsAsArray === true,
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    typeCast: castLikeMariaDb as unknown as NonNullable<QueryOptions['typeCast']>,
  };
  const [result, fields] =
    protocol === 'execute'
      ? await connection.execute(options, values as ExecuteValues[] | undefined)
      : await connection.query(options, values as ExecuteValues[] | undefined);
  if (Array.isArray(result)) {
    const rows = result as unknown as MariaDbRows;
    rows.meta = ((fields ?? []) as Mysql2Column[]).map(columnOf);
    return rows;
  }
  const header = result as ResultSetHeader;
  return {
    affectedRows: header.affectedRows,
    insertId: BigInt(header.insertId ?? 0),
    warningStatus: header.warningStatus ?? 0,
  };
}
