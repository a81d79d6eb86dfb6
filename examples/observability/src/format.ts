import type { Attributes } from '@opentelemetry/api';
import { DataPointType, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { ExampleRun } from './run.js';

/** Attributes every Tidemark instrument carries; printed once, not on every line. */
const COMMON = ['db.system.name', 'tidemark.cluster'];

/** What the example prints: the two requests, then the spans as a tree, then the metrics. */
export function formatRun(run: ExampleRun): string {
  const lines = [
    `POST /orders     -> ${run.write.status} ${JSON.stringify(run.write.body)}`,
    `GET  /my/orders  -> ${run.read.status} ${run.read.body.orders.length} order(s), served by ${run.read.body.servedBy} (${run.read.body.reason})`,
    '',
    `spans (${run.spans.length}, one trace per request):`,
    ...formatSpans(run.spans),
    '',
    'metrics (scope @tidemark/otel; every point also has db.system.name=postgresql tidemark.cluster=bookstore):',
    ...formatMetrics(run.metrics),
  ];
  return lines.join('\n');
}

export function formatSpans(spans: readonly ReadableSpan[]): string[] {
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  const children = (parent: string | undefined) =>
    spans.filter((span) => {
      const id = span.parentSpanContext?.spanId;
      return parent === undefined ? id === undefined || !ids.has(id) : id === parent;
    });
  const out: string[] = [];
  const visit = (span: ReadableSpan, depth: number) => {
    const kind = ['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'][span.kind] ?? '?';
    const ms = span.duration[0] * 1e3 + span.duration[1] / 1e6;
    out.push(`${'  '.repeat(depth + 1)}${kind} "${span.name}" ${ms.toFixed(1)} ms`);
    out.push(`${'  '.repeat(depth + 2)}${attributes(span.attributes, [])}`);
    for (const child of children(span.spanContext().spanId)) visit(child, depth + 1);
  };
  for (const root of children(undefined)) visit(root, 0);
  return out;
}

export function formatMetrics(metrics: ResourceMetrics): string[] {
  const out: string[] = [];
  for (const scope of metrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      const { name, unit } = metric.descriptor;
      for (const point of metric.dataPoints) {
        let value: string;
        if (metric.dataPointType === DataPointType.HISTOGRAM) {
          const h = point.value as { count: number; sum?: number };
          value = `histogram count=${h.count} sum=${round(h.sum ?? 0)}`;
        } else {
          value = `${metric.dataPointType === DataPointType.GAUGE ? 'gauge' : 'sum'} ${round(point.value as number)}`;
        }
        out.push(`  ${name} [${unit}] ${value}  ${attributes(point.attributes, COMMON)}`);
      }
    }
  }
  return out;
}

function attributes(attrs: Attributes, skip: readonly string[]): string {
  return Object.entries(attrs)
    .filter(([key]) => !skip.includes(key))
    .map(([key, value]) => `${key}=${typeof value === 'number' ? round(value) : String(value)}`)
    .join(' ');
}

function round(value: number): string {
  return String(Number(value.toPrecision(4)));
}
