import type { Attributes } from '@opentelemetry/api';
import type { ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { routeOutcome } from '@tidemark/core';
import { type Cluster, startCluster } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatRun } from '../src/format.js';
import { type ExampleRun, runExample } from '../src/run.js';

// The example on a real cluster: embedded PostgreSQL 18 (harness target pg18), a primary and one
// streaming replica. Everything checked comes from the SDK's in-memory exporters.

let cluster: Cluster;
let primaryUrl: string;
let replicaUrl: string;
let replicaName: string;

beforeAll(async () => {
  cluster = await startCluster('pg18', { replicas: 1 });
  primaryUrl = cluster.primary().url;
  replicaUrl = cluster.replicas()[0]!.url;
  replicaName = cluster.replicas()[0]!.name;
});
afterAll(async () => {
  await cluster?.teardown();
});

interface Point {
  readonly attributes: Attributes;
  readonly value: number | { count: number; sum?: number };
}

function points(metrics: ResourceMetrics, name: string): Point[] {
  return metrics.scopeMetrics
    .filter((scope) => scope.scope.name === '@tidemark/otel')
    .flatMap((scope) => scope.metrics)
    .filter((metric) => metric.descriptor.name === name)
    .flatMap((metric) => metric.dataPoints as Point[]);
}

function histogramCount(metrics: ResourceMetrics, name: string): number {
  return points(metrics, name).reduce(
    (sum, point) => sum + (typeof point.value === 'number' ? 0 : point.value.count),
    0,
  );
}

function gauge(metrics: ResourceMetrics, name: string): number | undefined {
  const point = points(metrics, name).find((p) => p.attributes['tidemark.replica.id'] === 'r1');
  return typeof point?.value === 'number' ? point.value : undefined;
}

const portOf = (url: string) => Number(new URL(url).port);

/** The shape every run has: a SERVER span per request, the routed read's CLIENT span under GET. */
function checkTrace(run: ExampleRun) {
  expect(run.write.status).toBe(201);
  expect(run.read.status).toBe(200);
  const id = (run.write.body as { id: number }).id;
  // Read-your-writes: the order is in the list, wherever the read went.
  expect(run.read.body.orders.map((o) => o.id)).toContain(id);

  expect(run.spans.map((s) => s.name)).toEqual(['POST /orders', 'GET /my/orders', 'postgresql']);
  const [post, get, read] = run.spans as [
    (typeof run.spans)[number],
    (typeof run.spans)[number],
    (typeof run.spans)[number],
  ];
  expect(post.attributes['http.response.status_code']).toBe(201);
  // The write gets no span from the bridge: it records routed reads only.
  expect(
    run.spans.filter((s) => s.parentSpanContext?.spanId === post.spanContext().spanId),
  ).toEqual([]);
  expect(read.parentSpanContext?.spanId).toBe(get.spanContext().spanId);
  expect(read.spanContext().traceId).toBe(get.spanContext().traceId);
  expect(read.kind).toBe(2); // SpanKind.CLIENT
  expect(read.attributes['db.system.name']).toBe('postgresql');
  expect(read.attributes['tidemark.cluster']).toBe('bookstore');
  expect(read.attributes['tidemark.route.reason']).toBe(run.read.body.reason);
  expect(read.attributes['tidemark.route.outcome']).toBe(
    routeOutcome(run.read.body.reason as Parameters<typeof routeOutcome>[0]),
  );
  expect(read.attributes['tidemark.route.target']).toBe(run.read.body.servedBy);

  // One read: one observation of db.client.operation.duration, with the span's outcome.
  expect(histogramCount(run.metrics, 'db.client.operation.duration')).toBe(1);
  const [duration] = points(run.metrics, 'db.client.operation.duration');
  expect(duration?.attributes['tidemark.route.outcome']).toBe(
    read.attributes['tidemark.route.outcome'],
  );
  expect(duration?.attributes['server.port']).toBe(read.attributes['server.port']);
  expect(gauge(run.metrics, 'tidemark.replica.reachable')).toBe(1);

  // No token or position in any exported attribute.
  const token = decodeURIComponent(run.cookie.slice('tidemark='.length));
  const exported = [
    ...run.spans.flatMap((s) => Object.values(s.attributes)),
    ...run.metrics.scopeMetrics.flatMap((s) =>
      s.metrics.flatMap((m) => m.dataPoints.flatMap((p) => Object.values(p.attributes))),
    ),
  ].map(String);
  expect(token.length).toBeGreaterThan(20);
  for (const value of exported) {
    expect(value).not.toContain(token);
    expect(value).not.toMatch(/^[0-9A-F]+\/[0-9A-F]+$/i); // an LSN
  }
  return read;
}

describe('examples/observability on embedded PostgreSQL 18', () => {
  it('replica applying: the read is served by r1, its span and metric say so', async () => {
    const run = await runExample({ primaryUrl, replicaUrl });
    const read = checkTrace(run);
    expect(['replica', 'replica_waited']).toContain(read.attributes['tidemark.route.outcome']);
    expect(read.attributes['tidemark.route.target']).toBe('r1');
    expect(read.attributes['server.port']).toBe(portOf(replicaUrl));
    expect(gauge(run.metrics, 'tidemark.replica.paused')).toBe(0);
    // What the CLI prints is built from the same run.
    const printed = formatRun(run);
    expect(printed).toContain('CLIENT "postgresql"');
    expect(printed).toContain('db.client.operation.duration [s] histogram count=1');
  });

  it('replay paused before the write: the read falls back to the primary', async () => {
    try {
      const run = await runExample({
        primaryUrl,
        replicaUrl,
        beforeWrite: () => cluster.pauseReplay(replicaName),
      });
      const read = checkTrace(run);
      expect(read.attributes['tidemark.route.outcome']).toBe('primary_fallback');
      expect(read.attributes['tidemark.route.target']).toBe('primary');
      expect(read.attributes['server.port']).toBe(portOf(primaryUrl));
      expect(gauge(run.metrics, 'tidemark.replica.paused')).toBe(1);
    } finally {
      await cluster.resumeReplay(replicaName);
    }
  });
});
