import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/**
 * The OpenTelemetry SDK as an application sets it up, with in-memory exporters so the example
 * can print (and its test can check) exactly what an exporter would ship. Swap the exporters for
 * OTLP ones (`@opentelemetry/exporter-*-otlp-*`) to send the same data to a collector.
 */
export interface Telemetry {
  readonly tracerProvider: BasicTracerProvider;
  readonly meterProvider: MeterProvider;
  /** Spans finished so far. */
  spans(): ReadableSpan[];
  /** Export the metrics now (cumulative totals as of this call). */
  collect(): Promise<ResourceMetrics>;
  shutdown(): Promise<void>;
}

export function startTelemetry(): Telemetry {
  // A context manager makes spans started inside a request's span its children: the router's
  // read span finds the HTTP request span as the active context.
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);

  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spanExporter)],
  });
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // The reader's own interval never fires in a run this short: collect() forces an export.
  const reader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });

  return {
    tracerProvider,
    meterProvider,
    spans: () => spanExporter.getFinishedSpans(),
    async collect() {
      await reader.forceFlush();
      const latest = metricExporter.getMetrics().at(-1);
      if (!latest) throw new Error('the metric reader exported nothing');
      return latest;
    },
    async shutdown() {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
      context.disable();
    },
  };
}
