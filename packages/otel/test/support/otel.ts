import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/**
 * The real OpenTelemetry SDK with in-memory exporters. The reader's own interval never fires
 * during a test; `collect()` forces an export, so each call sees cumulative totals as of now.
 */
export class OtelHarness {
  readonly metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  readonly reader = new PeriodicExportingMetricReader({
    exporter: this.metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  readonly meterProvider = new MeterProvider({ readers: [this.reader] });
  readonly spanExporter = new InMemorySpanExporter();
  readonly tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(this.spanExporter)],
  });

  async collect(): Promise<MetricData[]> {
    this.metricExporter.reset();
    await this.reader.forceFlush();
    return this.metricExporter
      .getMetrics()
      .flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
  }

  spans(): ReadableSpan[] {
    return this.spanExporter.getFinishedSpans();
  }

  async shutdown(): Promise<void> {
    await this.meterProvider.shutdown();
    await this.tracerProvider.shutdown();
  }
}

export interface Point {
  attributes: Record<string, unknown>;
  /** Counter / gauge value, or the histogram's count. */
  value: number;
  sum?: number;
  boundaries?: number[];
}

/** Data points of one instrument, flattened; histograms report their count as `value`. */
export function points(metrics: MetricData[], name: string): Point[] {
  const metric = metrics.find((m) => m.descriptor.name === name);
  if (!metric) return [];
  return metric.dataPoints.map((point) => {
    if (metric.dataPointType === DataPointType.HISTOGRAM) {
      const value = point.value as {
        count: number;
        sum?: number;
        buckets: { boundaries: number[] };
      };
      return {
        attributes: point.attributes,
        value: value.count,
        boundaries: value.buckets.boundaries,
        ...(value.sum === undefined ? {} : { sum: value.sum }),
      };
    }
    return { attributes: point.attributes, value: point.value as number };
  });
}

/** Sum of the values of the points whose attributes include `match`. */
export function total(metrics: MetricData[], name: string, match: Record<string, unknown> = {}) {
  return points(metrics, name)
    .filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v))
    .reduce((sum, p) => sum + p.value, 0);
}
