import {
  type Attributes,
  type BatchObservableCallback,
  context,
  type Meter,
  type MeterProvider,
  metrics,
  type ObservableGauge,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { ConfigError, type DecisionEvent, type Router, routeOutcome } from '@tidemark/core';
import { isHealthy, stalenessSeconds } from '@tidemark/core/adapter';
import {
  ATTR,
  DB_OPERATION_DURATION_BUCKETS,
  DB_SYSTEM_NAMES,
  type DbSystemName,
  errorType,
  METRIC,
  WAIT_DURATION_BUCKETS,
} from './conventions.js';
import { type NodeAddress, type NodeSpec, resolveNodes } from './nodes.js';
import { VERSION } from './version.js';

/** Instrumentation scope of every instrument and span this package creates. */
export const INSTRUMENTATION_SCOPE = '@tidemark/otel';

/** Options of {@link instrumentRouter}. */
export interface TidemarkOtelOptions {
  /** `db.system.name` of the cluster: `postgresql`, `mysql`, `mariadb` or `mongodb`. */
  system: DbSystemName;
  /**
   * Address of each node, keyed as the router's decisions name them: `primary` and each replica
   * id. A connection URL (only host and port are kept) or `{ address, port }`. Nodes left out
   * get no `server.address` / `server.port`; an id the router does not know is an error.
   */
  nodes?: Readonly<Record<string, NodeSpec>>;
  /** Default: the global meter provider (`metrics.getMeterProvider()`). */
  meterProvider?: MeterProvider;
  /** Default: the global tracer provider (`trace.getTracerProvider()`). */
  tracerProvider?: TracerProvider;
  /**
   * One CLIENT span per routed read (and per read that threw), with the decision as attributes.
   * Default false: metrics alone cost no allocation per read beyond the attribute set.
   */
  tracing?: boolean;
  /**
   * Name of read spans. Default `db.system.name` (the conventions' last-resort name): a routed
   * read is one logical operation whatever node serves it, so the node stays out of the name.
   */
  spanName?: string;
  /**
   * Monotonic clock of the router, in milliseconds, to age the monitor's samples. Default
   * `performance.now()`, the router's default clock; pass the same clock if you gave the router
   * another one.
   */
  now?: () => number;
}

/** Handle returned by {@link instrumentRouter}. */
export interface TidemarkInstrumentation {
  /** Stop listening to the router and stop observing its replicas. Idempotent. */
  shutdown(): void;
}

/**
 * Bridge one router to OpenTelemetry: instruments built from the router's events, observable
 * gauges read from its monitor at collection time, and (opt-in) a span per routed read.
 *
 * Spans are created when the router reports the read, with the read's real start and end times
 * and the caller's active context as parent, because the router emits events and runs no
 * callback around the read. Driver spans inside the read are therefore siblings of the read span
 * in a trace, not its children.
 *
 * Call it once per router: a second bridge on the same router records every read twice.
 *
 * @throws ConfigError (`TIDEMARK_CONFIG`) on an unknown `system`, or a `nodes` entry that is not
 * a URL or an address, or that names neither `primary` nor one of the router's replicas.
 */
export function instrumentRouter<P, C>(
  router: Router<P, C>,
  options: TidemarkOtelOptions,
): TidemarkInstrumentation {
  const system = options?.system;
  if (!DB_SYSTEM_NAMES.includes(system)) {
    throw new ConfigError(
      `system must be one of ${DB_SYSTEM_NAMES.join(', ')} (the db.system.name of the cluster).`,
    );
  }
  const nodes = resolveNodes(options.nodes);
  // A misspelt id would silently leave that node's reads without server.address.
  const known = new Set(['primary', ...router.monitor.states().map((state) => state.id)]);
  for (const id of nodes.keys()) {
    if (!known.has(id)) {
      throw new ConfigError(
        `nodes.${id} names no node of cluster "${router.cluster}" (known: ${[...known].join(', ')}).`,
      );
    }
  }
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(
    INSTRUMENTATION_SCOPE,
    VERSION,
  );
  const tracer =
    options.tracing === true
      ? (options.tracerProvider ?? trace.getTracerProvider()).getTracer(
          INSTRUMENTATION_SCOPE,
          VERSION,
        )
      : undefined;
  const now = options.now ?? (() => performance.now());
  const spanName = options.spanName ?? system;
  const base: Attributes = { [ATTR.dbSystemName]: system, [ATTR.cluster]: router.cluster };
  // Per-node attribute sets are built once: the hot path only spreads them.
  const nodeAttributes = new Map<string, Attributes>();
  for (const [id, node] of nodes) nodeAttributes.set(id, serverAttributes(node));

  const instruments = createInstruments(meter);
  const unsubscribe: Array<() => void> = [];
  const on: Router<P, C>['events']['on'] = (event, listener) => {
    const off = router.events.on(event, listener);
    unsubscribe.push(off);
    return off;
  };

  // One attribute set per (target, reason), built on first use and reused: the per-read cost is
  // then the SDK's own record. Bounded by (replicas + 1) x 9 reasons.
  const readAttributes = new Map<string, Attributes>();
  on('decision', (decision) => {
    const key = `${decision.reason}\u0000${decision.target}`;
    let attributes = readAttributes.get(key);
    if (attributes === undefined) {
      attributes = {
        ...base,
        ...nodeAttributes.get(decision.target),
        [ATTR.outcome]: routeOutcome(decision.reason),
        [ATTR.reason]: decision.reason,
      };
      readAttributes.set(key, attributes);
    }
    instruments.operationDuration.record(decision.durationMs / 1000, attributes);
    if (tracer) readSpan(tracer, spanName, decision, attributes);
  });
  on('read-error', ({ error, durationMs }) => {
    const type = errorType(error);
    const attributes: Attributes = {
      ...base,
      [ATTR.outcome]: 'error',
      [ATTR.errorType]: type,
    };
    instruments.operationDuration.record(durationMs / 1000, attributes);
    if (tracer) errorSpan(tracer, spanName, durationMs, attributes, type);
  });
  on('wait', (event) => {
    instruments.waitDuration.record(event.waitedMs / 1000, {
      ...base,
      ...nodeAttributes.get(event.replica),
      [ATTR.replica]: event.replica,
      [ATTR.waitResult]: event.reached ? 'reached' : 'timeout',
      [ATTR.waitServerSide]: event.serverSide,
    });
  });
  on('cap-rejected', () => instruments.capRejections.add(1, base));
  on('retry', ({ failedTarget, error }) =>
    instruments.retries.add(1, {
      ...base,
      ...nodeAttributes.get(failedTarget),
      [ATTR.target]: failedTarget,
      [ATTR.errorType]: errorType(error),
    }),
  );
  on('bad-token', ({ error }) =>
    instruments.badTokens.add(1, { ...base, [ATTR.errorType]: errorType(error) }),
  );
  // The event carries the position; only the fact is counted (see ATTR).
  on('other-history', () => instruments.otherHistoryTokens.add(1, base));
  on('history-unverified', () => instruments.historyUnverified.add(1, base));
  on('lost-write', ({ verdict }) =>
    instruments.lostWrites.add(1, { ...base, [ATTR.lostWriteVerdict]: verdict }),
  );

  const observe: BatchObservableCallback = (result) => {
    const at = now();
    for (const state of router.monitor.states()) {
      const attributes: Attributes = {
        ...base,
        ...nodeAttributes.get(state.id),
        [ATTR.replica]: state.id,
      };
      result.observe(instruments.replicaReachable, state.reachable ? 1 : 0, attributes);
      result.observe(
        instruments.replicaHealthy,
        isHealthy(state, at, router.health) ? 1 : 0,
        attributes,
      );
      result.observe(instruments.replicaPaused, state.paused ? 1 : 0, attributes);
      if (state.lagSeconds !== undefined) {
        result.observe(instruments.replicaLag, state.lagSeconds, attributes);
      }
      if (state.lagBytes !== undefined) {
        result.observe(instruments.replicaLagSize, state.lagBytes, attributes);
      }
      // Before the first sample there is nothing to age or to measure against the primary.
      if (Number.isFinite(state.sampledAt)) {
        result.observe(
          instruments.replicaSampleAge,
          Math.max(0, (at - state.sampledAt) / 1000),
          attributes,
        );
        const staleness = stalenessSeconds(state, at);
        if (staleness !== undefined) {
          result.observe(instruments.replicaStaleness, staleness, attributes);
        }
      }
    }
  };
  const gauges: ObservableGauge[] = [
    instruments.replicaReachable,
    instruments.replicaHealthy,
    instruments.replicaPaused,
    instruments.replicaLag,
    instruments.replicaLagSize,
    instruments.replicaSampleAge,
    instruments.replicaStaleness,
  ];
  meter.addBatchObservableCallback(observe, gauges);

  let stopped = false;
  return {
    shutdown() {
      if (stopped) return;
      stopped = true;
      for (const off of unsubscribe) off();
      meter.removeBatchObservableCallback(observe, gauges);
    },
  };
}

function serverAttributes(node: NodeAddress): Attributes {
  return node.port === undefined
    ? { [ATTR.serverAddress]: node.address }
    : { [ATTR.serverAddress]: node.address, [ATTR.serverPort]: node.port };
}

function createInstruments(meter: Meter) {
  return {
    operationDuration: meter.createHistogram(METRIC.operationDuration, {
      description: 'Duration of database client operations (reads routed by Tidemark).',
      unit: 's',
      advice: { explicitBucketBoundaries: [...DB_OPERATION_DURATION_BUCKETS] },
    }),
    waitDuration: meter.createHistogram(METRIC.waitDuration, {
      description: 'Time a read waited for a replica to apply its session position.',
      unit: 's',
      advice: { explicitBucketBoundaries: [...WAIT_DURATION_BUCKETS] },
    }),
    capRejections: meter.createCounter(METRIC.capRejections, {
      description: 'Reads refused a primary fallback because the fallback cap was spent.',
      unit: '{read}',
    }),
    retries: meter.createCounter(METRIC.retries, {
      description: 'Reads that failed on their first target and were retried once elsewhere.',
      unit: '{read}',
    }),
    badTokens: meter.createCounter(METRIC.badTokens, {
      description: 'Session positions that were malformed, forged, oversized or impossible.',
      unit: '{token}',
    }),
    otherHistoryTokens: meter.createCounter(METRIC.otherHistoryTokens, {
      description: 'Session positions from another replication history (lost in a failover).',
      unit: '{token}',
    }),
    historyUnverified: meter.createCounter(METRIC.historyUnverified, {
      description: 'Reads whose position could not be checked against the primary in time.',
      unit: '{read}',
    }),
    lostWrites: meter.createCounter(METRIC.lostWrites, {
      description: "Writes after which the session's earlier write was found lost or unverifiable.",
      unit: '{write}',
    }),
    replicaLag: meter.createObservableGauge(METRIC.replicaLag, {
      description: 'Replication lag the replica reports, in seconds.',
      unit: 's',
    }),
    replicaLagSize: meter.createObservableGauge(METRIC.replicaLagSize, {
      description: 'Log the replica has not applied yet, in bytes (where the database tells).',
      unit: 'By',
    }),
    replicaStaleness: meter.createObservableGauge(METRIC.replicaStaleness, {
      description:
        'How far the replica trails the primary: the larger of its own lag and the time since it last had everything the primary had.',
      unit: 's',
    }),
    replicaSampleAge: meter.createObservableGauge(METRIC.replicaSampleAge, {
      description: "Age of the monitor's latest sample of the replica's applied position.",
      unit: 's',
    }),
    replicaReachable: meter.createObservableGauge(METRIC.replicaReachable, {
      description: '1 while the last probe or read of the replica succeeded, else 0.',
      unit: '1',
    }),
    replicaHealthy: meter.createObservableGauge(METRIC.replicaHealthy, {
      description:
        '1 while the replica may serve reads (reachable, fresh sample, on the primary history, under the lag limit), else 0.',
      unit: '1',
    }),
    replicaPaused: meter.createObservableGauge(METRIC.replicaPaused, {
      description: '1 while the replica pauses applying changes on purpose, else 0.',
      unit: '1',
    }),
  };
}

/**
 * The start of a span that ended at `end` (a `Date.now()` reading) after `durationMs`.
 * The SDK stamps the caller's span with `Date.now()`, whole milliseconds rounded down, and
 * `end` is rounded down too: `end - durationMs` can then fall up to 1 ms before the caller's
 * span when the read began in that span's first millisecond, and trace viewers draw the child
 * outside its parent. Rounded up, the start is never before the caller's and at most 1 ms late.
 */
function startBefore(end: number, durationMs: number): number {
  return Math.min(end, Math.ceil(end - durationMs));
}

function readSpan(
  tracer: Tracer,
  name: string,
  decision: DecisionEvent,
  metricAttributes: Attributes,
): void {
  const end = Date.now();
  const span = tracer.startSpan(
    name,
    {
      kind: SpanKind.CLIENT,
      startTime: startBefore(end, decision.durationMs),
      attributes: {
        ...metricAttributes,
        [ATTR.target]: decision.target,
        [ATTR.waitDuration]: decision.waitedMs / 1000,
        [ATTR.stale]: decision.stale,
        [ATTR.retried]: decision.retried,
      },
    },
    context.active(),
  );
  span.end(end);
}

function errorSpan(
  tracer: Tracer,
  name: string,
  durationMs: number,
  attributes: Attributes,
  type: string,
): void {
  const end = Date.now();
  const span = tracer.startSpan(
    name,
    { kind: SpanKind.CLIENT, startTime: startBefore(end, durationMs), attributes },
    context.active(),
  );
  // The message stays out: error messages may quote a token's content.
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  span.end(end);
}
