import type { PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { LIST_LENGTH } from '../../ledger.js';
import type { OrderQueries } from '../types.js';

/**
 * Everything the demo creates lives in this database (MySQL's word for a schema), so pointing the
 * demo at your own cluster touches nothing else. It is dropped and recreated before every run.
 */
export const DEMO_DATABASE = 'tidemark_bookstore';

const TABLE = `${DEMO_DATABASE}.orders`;

/**
 * Statements that give a run a fresh, empty `orders` table, one per call (no multi-statement
 * connections needed). The same table as on PostgreSQL: DATETIME(6) keeps the microseconds that
 * `ORDER BY created_at` relies on; MySQL 9.7 and MariaDB 10.11 both read this DDL.
 */
export const RESET_ORDERS_STATEMENTS: readonly string[] = [
  `DROP DATABASE IF EXISTS ${DEMO_DATABASE}`,
  `CREATE DATABASE ${DEMO_DATABASE}`,
  `CREATE TABLE ${TABLE} (
  id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer int NOT NULL,
  created_at datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  note text NOT NULL,
  KEY orders_customer_idx (customer)
) ENGINE=InnoDB`,
];

export const DROP_DATABASE_SQL = `DROP DATABASE IF EXISTS ${DEMO_DATABASE}`;

/** The bookstore's write and read in MySQL and MariaDB (the same SQL for both). */
export const mysqlOrders: OrderQueries<PoolConnection> = {
  async placeOrder(connection, customer, note) {
    // query, not execute: one round trip, no server-side prepare per connection.
    const [result] = await connection.query<ResultSetHeader>(
      `INSERT INTO ${TABLE} (customer, note) VALUES (?, ?)`,
      [customer, note],
    );
    if (!result.insertId) throw new Error('INSERT INTO orders reported no insertId');
    return Number(result.insertId);
  },
  async latestOrders(connection, customer) {
    const [rows] = await connection.query<RowDataPacket[]>(
      `SELECT id FROM ${TABLE} WHERE customer = ? ORDER BY created_at DESC, id DESC LIMIT ${LIST_LENGTH}`,
      [customer],
    );
    return rows.map((row) => Number(row['id']));
  },
};
