import { Router, TokenCodec } from '@tidemark/core';
import { createMysqlAdapter } from '@tidemark/mysql';
import { createPgAdapter } from '@tidemark/pg';
import type { ResultSetHeader, RowDataPacket } from 'mysql2/promise';

/** Where each database lives: a primary and its replicas, by URL. */
export interface Nodes {
  readonly primary: string;
  readonly replicas: Readonly<Record<string, string>>;
}

/** The two routers of {@link openShop}. */
export type Shop = Awaited<ReturnType<typeof openShop>>;

/**
 * A shop whose orders live in PostgreSQL and whose invoices live in MySQL. Both routers sign
 * tokens with the same key, so the one cookie a request returns can carry both positions.
 */
export async function openShop(pgNodes: Nodes, mysqlNodes: Nodes, secret: string) {
  const tokens = new TokenCodec({ keys: [{ id: 'shop', secret }] });
  const orders = new Router({
    cluster: 'orders',
    adapter: createPgAdapter({ primary: pgNodes.primary, replicas: { ...pgNodes.replicas } }),
    tokens,
  });
  const invoices = new Router({
    cluster: 'invoices',
    adapter: createMysqlAdapter({
      flavour: 'mysql',
      primary: mysqlNodes.primary,
      replicas: { ...mysqlNodes.replicas },
    }),
    tokens,
  });
  await Promise.all([orders.ready(), invoices.ready()]);
  return {
    orders,
    invoices,
    close: async () => {
      await Promise.all([orders.close(), invoices.close()]);
    },
  };
}

/** Create the two tables (on the primaries). */
export async function createTables(shop: Shop): Promise<void> {
  const session = shop.orders.withSession();
  await session.write((c) =>
    c.query('CREATE TABLE IF NOT EXISTS orders (id serial PRIMARY KEY, customer int NOT NULL)'),
  );
  await shop.invoices
    .withSession(session)
    .write((c) =>
      c.query(
        'CREATE TABLE IF NOT EXISTS invoices (id int AUTO_INCREMENT PRIMARY KEY, order_id int NOT NULL)',
      ),
    );
}

/**
 * "Place an order": one request writes to both databases and answers with one cookie. The
 * request began with `cookie` (what the browser sent, or nothing).
 */
export async function placeOrder(
  shop: Shop,
  cookie: string | undefined,
  customer: number,
): Promise<{ orderId: number; cookie: string | undefined }> {
  const orders = shop.orders.withSession(cookie);
  const invoices = shop.invoices.withSession(orders); // the same session: one cookie
  const orderId = await orders.transaction(async (c) => {
    const { rows } = await c.query<{ id: number }>(
      'INSERT INTO orders (customer) VALUES ($1) RETURNING id',
      [customer],
    );
    return (rows[0] as { id: number }).id;
  });
  await invoices.write((c) =>
    c.query<ResultSetHeader>('INSERT INTO invoices (order_id) VALUES (?)', [orderId]),
  );
  return { orderId, cookie: await orders.token() };
}

/** "My order": the next request reads the order and its invoice back, from wherever is fresh. */
export async function showOrder(
  shop: Shop,
  cookie: string | undefined,
  orderId: number,
): Promise<{ order: boolean; invoice: boolean }> {
  const orders = shop.orders.withSession(cookie);
  const invoices = shop.invoices.withSession(orders);
  const [order, invoice] = await Promise.all([
    orders.read(async (c) => {
      const { rows } = await c.query('SELECT id FROM orders WHERE id = $1', [orderId]);
      return rows.length === 1;
    }),
    invoices.read(async (c) => {
      const [rows] = await c.query<RowDataPacket[]>('SELECT id FROM invoices WHERE order_id = ?', [
        orderId,
      ]);
      return rows.length === 1;
    }),
  ]);
  return { order, invoice };
}
