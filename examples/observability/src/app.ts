import { context, SpanKind, type Tracer, trace } from '@opentelemetry/api';
import { currentSession, type Router } from '@tidemark/core';
import type { TokenCarrier } from '@tidemark/http';
import { tidemarkExpress } from '@tidemark/http/express';
import express, { type Express } from 'express';
import type pg from 'pg';

/**
 * A minimal Bookstore API over a Tidemark router: `POST /orders` writes on the primary, `GET
 * /my/orders` reads wherever the router sends it. The session travels in a signed cookie
 * (`@tidemark/http`). The user is the `x-user` header (demo authentication).
 *
 * Each request gets a SERVER span, standing in for the HTTP instrumentation a real app has
 * (`@opentelemetry/instrumentation-http` / `-express`), so the router's read span has a parent.
 */
export function observedApp(
  router: Router<unknown, pg.PoolClient>,
  carrier: TokenCarrier,
  tracer: Tracer,
): Express {
  const app = express();
  app.use((request, response, next) => {
    const span = tracer.startSpan(`${request.method} ${request.path}`, {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': request.method,
        'url.path': request.path,
        'http.route': request.path,
      },
    });
    response.on('finish', () => {
      span.setAttribute('http.response.status_code', response.statusCode);
      span.end();
    });
    context.with(trace.setSpan(context.active(), span), next);
  });
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
