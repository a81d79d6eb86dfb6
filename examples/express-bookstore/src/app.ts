import { currentSession, type Router } from '@tidemark/core';
import type { TokenCarrier } from '@tidemark/http';
import { tidemarkExpress } from '@tidemark/http/express';
import express, { type Express } from 'express';
import type pg from 'pg';

/**
 * The Bookstore API. Handlers never see a token: the middleware puts the request's session in
 * context and `currentSession()` finds it. The user comes from `x-user` (demo "authentication").
 */
export function bookstoreApp(
  router: Router<unknown, pg.PoolClient>,
  carrier: TokenCarrier,
): Express {
  const app = express();
  app.use(express.json());
  app.use(tidemarkExpress(carrier, { userId: (request) => request.header('x-user') }));

  app.post('/orders', async (request, response) => {
    const user = request.header('x-user');
    if (!user) {
      response.status(401).json({ error: 'send x-user: <name>' });
      return;
    }
    const title = String((request.body as { title?: unknown } | undefined)?.title ?? 'a book');
    const id = await router.write(currentSession(), async (db) => {
      const { rows } = await db.query<{ id: string }>(
        'INSERT INTO orders (customer, title) VALUES ($1, $2) RETURNING id',
        [user, title],
      );
      return Number(rows[0]?.id);
    });
    response.status(201).json({ id, title });
  });

  app.get('/my/orders', async (request, response) => {
    const user = request.header('x-user');
    if (!user) {
      response.status(401).json({ error: 'send x-user: <name>' });
      return;
    }
    const { value, decision } = await router.readDetailed(currentSession(), async (db) => {
      const { rows } = await db.query<{ id: string; title: string }>(
        'SELECT id, title FROM orders WHERE customer = $1 ORDER BY id DESC LIMIT 10',
        [user],
      );
      return rows.map((row) => ({ id: Number(row.id), title: row.title }));
    });
    response.json({ orders: value, servedBy: decision.target, reason: decision.reason });
  });
  return app;
}
