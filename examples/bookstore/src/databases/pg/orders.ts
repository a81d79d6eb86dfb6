import type pg from 'pg';
import { LIST_LENGTH } from '../../ledger.js';
import type { OrderQueries } from '../types.js';

/**
 * Everything the demo creates lives in this schema, so pointing the demo at your own cluster
 * touches nothing else. It is dropped and recreated before every run (a fresh `orders` table).
 */
export const DEMO_SCHEMA = 'tidemark_bookstore';

const TABLE = `${DEMO_SCHEMA}.orders`;

/** Statements that give a run a fresh, empty `orders` table. Runs on the primary. */
export const RESET_ORDERS_SQL = `
DROP SCHEMA IF EXISTS ${DEMO_SCHEMA} CASCADE;
CREATE SCHEMA ${DEMO_SCHEMA};
CREATE TABLE ${TABLE} (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  note text NOT NULL
);
CREATE INDEX orders_customer_idx ON ${TABLE} (customer);
`;

export const DROP_SCHEMA_SQL = `DROP SCHEMA IF EXISTS ${DEMO_SCHEMA} CASCADE`;

/** The bookstore's write and read in PostgreSQL. */
export const pgOrders: OrderQueries<pg.PoolClient> = {
  async placeOrder(client, customer, note) {
    const result = await client.query<{ id: string }>(
      `INSERT INTO ${TABLE} (customer, note) VALUES ($1, $2) RETURNING id`,
      [customer, note],
    );
    const id = result.rows[0]?.id;
    if (id === undefined) throw new Error('INSERT ... RETURNING id returned no row');
    return Number(id);
  },
  async latestOrders(client, customer) {
    const result = await client.query<{ id: string }>(
      `SELECT id FROM ${TABLE} WHERE customer = $1 ORDER BY created_at DESC, id DESC LIMIT ${LIST_LENGTH}`,
      [customer],
    );
    return result.rows.map((row) => Number(row.id));
  },
};
