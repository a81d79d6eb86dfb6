// Run: pnpm --filter @tidemark/otel example
//   With PRIMARY_URL and REPLICA_URL set (any PostgreSQL primary with one streaming replica), it
//   uses that cluster; without them it starts a throwaway local one (embedded PostgreSQL 18).
//
// Wires a router to the OpenTelemetry SDK, reads with replicas caught up, then with one paused,
// and prints the spans and metrics the bridge produced.
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Router, Session } from '@tidemark/core';
import { instrumentRouter } from '@tidemark/otel';
import { createPgAdapter } from '@tidemark/pg';
import { type Cluster, startCluster } from '@tidemark/test-clusters';

let cluster: Cluster | undefined;
let primary = process.env['PRIMARY_URL'];
let replica = process.env['REPLICA_URL'];
if (primary === undefined || replica === undefined) {
  console.log('starting a local PostgreSQL 18 primary and replica...');
  cluster = await startCluster('pg18', { replicas: 1 });
  primary = cluster.primary().url;
  replica = cluster.replicas()[0]!.url;
}

// 1. The OpenTelemetry SDK, as an application sets it up (here with in-memory exporters).
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({
  exporter: metricExporter,
  exportIntervalMillis: 60_000,
});
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(spans)],
});

// 2. The router, and the bridge: one call.
const router = new Router({
  adapter: createPgAdapter({ primary, replicas: { r1: replica } }),
  cluster: 'main',
});
const telemetry = instrumentRouter(router, {
  system: 'postgresql',
  nodes: { primary, r1: replica }, // only host and port are kept
  tracerProvider,
  tracing: true,
});
await router.ready();

// 3. Traffic: a write and its read with the replica applying, then with replay paused.
await router.write(new Session(), (db) => db.query('CREATE TABLE IF NOT EXISTS notes (body text)'));
async function writeThenRead(label: string): Promise<void> {
  const session = new Session();
  await router.write(session, (db) => db.query('INSERT INTO notes VALUES ($1)', [label]));
  const { decision } = await router.readDetailed(session, (db) =>
    db.query('SELECT count(*) FROM notes'),
  );
  console.log(`${label}: read on ${decision.target} (${decision.reason})`);
}
await writeThenRead('replica applying');
if (cluster) {
  await cluster.pauseReplay(cluster.replicas()[0]!.name);
  await writeThenRead('replay paused');
  await cluster.resumeReplay(cluster.replicas()[0]!.name);
}

// 4. What an exporter would ship.
console.log('\nspans:');
for (const span of spans.getFinishedSpans()) {
  const a = span.attributes;
  console.log(
    `  ${span.name} kind=CLIENT outcome=${a['tidemark.route.outcome']} reason=${a['tidemark.route.reason']} server=${a['server.address']}:${a['server.port']} wait=${a['tidemark.route.wait.duration']}s`,
  );
}
await reader.forceFlush();
console.log('\nmetrics:');
for (const resource of metricExporter.getMetrics().slice(-1)) {
  for (const scope of resource.scopeMetrics) {
    for (const metric of scope.metrics) {
      for (const point of metric.dataPoints) {
        const value =
          typeof point.value === 'number'
            ? point.value
            : `count=${(point.value as { count: number }).count}`;
        const labels = Object.entries(point.attributes)
          .filter(([key]) => key !== 'db.system.name' && key !== 'tidemark.cluster')
          .map(([key, v]) => `${key}=${String(v)}`)
          .join(' ');
        console.log(`  ${metric.descriptor.name} ${value}  ${labels}`);
      }
    }
  }
}

telemetry.shutdown();
await router.close();
await cluster?.teardown();
