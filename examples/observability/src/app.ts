import { context, SpanKind, type Tracer, trace } from '@opentelemetry/api';
import type { Router } from '@tidemark/core';
// The Express Bookstore's own API (examples/express-bookstore): POST /orders writes on the
// primary, GET /my/orders reads wherever the router sends it, the session in a signed cookie.
import { bookstoreApp } from '@tidemark/example-express-bookstore/src/app.js';
import type { TokenCarrier } from '@tidemark/http';
import express, { type Express } from 'express';
import type pg from 'pg';

/**
 * The Bookstore API behind a middleware that gives each request a SERVER span, standing in for
 * the HTTP instrumentation a real app has (`@opentelemetry/instrumentation-http` / `-express`),
 * so the router's read span has a parent. The user is the `x-user` header (demo authentication).
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
  app.use(bookstoreApp(router, carrier));
  return app;
}
