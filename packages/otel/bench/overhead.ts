// Run: pnpm --filter @tidemark/otel bench   (starts a local PostgreSQL 18 primary and replica)
//
// What the bridge adds to a routed read, measured two ways:
// 1. End to end: point reads (SELECT 1, no token) through one router, in interleaved rounds with
//    the bridge off, metrics only, and metrics plus tracing. Database round trips dominate and
//    the machine is shared, so read this as an upper bound with noise.
// 2. The listener alone: the router's `decision` event emitted with the same payload a read
//    produces, so the cost per read of recording the histogram (and the span) shows without
//    the database's noise.
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { type DecisionEvent, Router, Session } from '@tidemark/core';
import { instrumentRouter, type TidemarkInstrumentation } from '@tidemark/otel';
import { createPgAdapter } from '@tidemark/pg';
import { startCluster } from '@tidemark/test-clusters';

const READS = Number(process.env['READS'] ?? 2000);
const ROUNDS = 5;
const EMITS = 200_000;

const cluster = await startCluster('pg18', { replicas: 1 });
const nodes = { primary: cluster.primary().url, r1: cluster.replicas()[0]!.url };
const router = new Router({
  adapter: createPgAdapter({ primary: nodes.primary, replicas: { r1: nodes.r1 }, poolSize: 4 }),
  cluster: 'main',
});
await router.ready();

const reader = new PeriodicExportingMetricReader({
  exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
  exportIntervalMillis: 3_600_000,
});
const meterProvider = new MeterProvider({ readers: [reader] });
metrics.setGlobalMeterProvider(meterProvider);
const spans = new InMemorySpanExporter();
// The batch processor, as production setups use: spans are exported off the read path.
const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new BatchSpanProcessor(spans)],
});

type Mode = 'off' | 'metrics' | 'metrics+tracing';
const MODES: Mode[] = ['off', 'metrics', 'metrics+tracing'];
function attach(mode: Mode): TidemarkInstrumentation | undefined {
  if (mode === 'off') return undefined;
  return instrumentRouter(router, {
    system: 'postgresql',
    nodes,
    meterProvider,
    tracerProvider,
    tracing: mode === 'metrics+tracing',
  });
}

const totals = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
for (let i = 0; i < 200; i++) await router.read(new Session(), (db) => db.query('SELECT 1'));
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of MODES) {
    const bridge = attach(mode);
    const started = performance.now();
    for (let i = 0; i < READS; i++) await router.read(new Session(), (db) => db.query('SELECT 1'));
    totals.get(mode)!.push(((performance.now() - started) * 1000) / READS);
    bridge?.shutdown();
    spans.reset();
  }
}
console.log(`end to end, ${READS} reads x ${ROUNDS} rounds, median µs per read:`);
for (const mode of MODES) {
  const sorted = [...totals.get(mode)!].sort((a, b) => a - b);
  console.log(`  ${mode.padEnd(16)} ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)}`);
}

const decision: DecisionEvent = {
  cluster: 'main',
  target: 'r1',
  reason: 'replica-covered',
  waitedMs: 0,
  stale: false,
  retried: false,
  durationMs: 0.4,
};
console.log(`listener alone, ${EMITS} decision events, µs per read:`);
for (const mode of MODES) {
  const bridge = attach(mode);
  const started = performance.now();
  for (let i = 0; i < EMITS; i++) router.events.emit('decision', decision);
  console.log(
    `  ${mode.padEnd(16)} ${(((performance.now() - started) * 1000) / EMITS).toFixed(3)}`,
  );
  bridge?.shutdown();
  spans.reset();
}

await router.close();
await meterProvider.shutdown();
await tracerProvider.shutdown();
await cluster.teardown();
