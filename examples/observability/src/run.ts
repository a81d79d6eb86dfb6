import type { ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Router, TokenCodec } from '@tidemark/core';
import { TokenCarrier } from '@tidemark/http';
import { instrumentRouter } from '@tidemark/otel';
import { createPgAdapter } from '@tidemark/pg';
import pg from 'pg';
import { observedApp } from './app.js';
import { startTelemetry } from './telemetry.js';

export interface ExampleOptions {
  readonly primaryUrl: string;
  /** The one replica, `r1` for the router. */
  readonly replicaUrl: string;
  /**
   * Runs before the write (the CLI's --pause-replay pauses the replica here: a local replica
   * replays a write within milliseconds, so pausing after it would usually be too late).
   */
  readonly beforeWrite?: (() => Promise<void>) | undefined;
}

export interface ExampleRun {
  readonly write: { readonly status: number; readonly body: unknown };
  readonly read: {
    readonly status: number;
    readonly body: {
      readonly orders: ReadonlyArray<{ id: number; title: string }>;
      readonly servedBy: string;
      readonly reason: string;
    };
  };
  /** The signed cookie the write returned and the read sent (never exported as telemetry). */
  readonly cookie: string;
  /** Every span the SDK finished, in start order. */
  readonly spans: readonly ReadableSpan[];
  /** The metrics as an exporter would ship them after the read. */
  readonly metrics: ResourceMetrics;
}

/**
 * One write and one read through an Express app over a Tidemark router, with the OpenTelemetry
 * SDK and `@tidemark/otel` wired in: returns what the exporters received.
 */
export async function runExample(options: ExampleOptions): Promise<ExampleRun> {
  await ensureSchema(options.primaryUrl);
  const telemetry = startTelemetry();
  const router = new Router({
    adapter: createPgAdapter({
      primary: options.primaryUrl,
      replicas: { r1: options.replicaUrl },
    }),
    cluster: 'bookstore',
  });
  // The bridge: metrics for every routed read, and (tracing: true) a CLIENT span per read.
  const instrumentation = instrumentRouter(router, {
    system: 'postgresql',
    nodes: { primary: options.primaryUrl, r1: options.replicaUrl }, // only host and port are kept
    tracing: true,
    tracerProvider: telemetry.tracerProvider,
    meterProvider: telemetry.meterProvider,
  });
  let server: ReturnType<ReturnType<typeof observedApp>['listen']> | undefined;
  try {
    await router.ready();
    const tokens = new TokenCodec({
      keys: [
        {
          id: 'k1',
          secret: process.env['TIDEMARK_SECRET'] ?? 'example-only-secret-never-use-in-production',
        },
      ],
    });
    const carrier = new TokenCarrier({ tokens, routers: [router] });
    const app = observedApp(router, carrier, telemetry.tracerProvider.getTracer('bookstore-api'));
    const listening = app.listen(0, '127.0.0.1');
    server = listening;
    await new Promise<void>((resolve, reject) => {
      listening.once('listening', resolve);
      listening.once('error', reject);
    });
    const address = listening.address();
    const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

    await options.beforeWrite?.();
    const written = await fetch(`${base}/orders`, {
      method: 'POST',
      headers: { 'x-user': 'ada', 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Dune' }),
    });
    const cookie = written.headers
      .getSetCookie()
      .map((header) => header.split(';')[0] ?? '')
      .find((pair) => pair.startsWith('tidemark='));
    if (!cookie) throw new Error('the write returned no tidemark cookie');
    const write = { status: written.status, body: (await written.json()) as unknown };

    const read = await fetch(`${base}/my/orders`, { headers: { 'x-user': 'ada', cookie } });
    const readRun = {
      status: read.status,
      body: (await read.json()) as ExampleRun['read']['body'],
    };

    const metrics = await telemetry.collect();
    const spans = traceOrder(telemetry.spans());
    return { write, read: readRun, cookie, spans, metrics };
  } finally {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    instrumentation.shutdown();
    await router.close();
    await telemetry.shutdown();
  }
}

async function ensureSchema(primaryUrl: string): Promise<void> {
  const client = new pg.Client(primaryUrl);
  await client.connect();
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS orders (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      customer text NOT NULL,
      title text NOT NULL)`);
  } finally {
    await client.end();
  }
}

/**
 * Spans as a trace viewer lists them: by start time, a parent before its children. Starts are
 * whole milliseconds, so a read begun in its request's first millisecond ties with it; the
 * exporter's own order (by end) would then put the child first.
 */
function traceOrder(spans: readonly ReadableSpan[]): ReadableSpan[] {
  const depth = (span: ReadableSpan): number => {
    const parent = spans.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId);
    return parent ? depth(parent) + 1 : 0;
  };
  return [...spans].sort((a, b) => compareTime(a.startTime, b.startTime) || depth(a) - depth(b));
}

function compareTime(a: [number, number], b: [number, number]): number {
  return a[0] - b[0] || a[1] - b[1];
}
