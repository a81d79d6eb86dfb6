import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ConfigError, ErrorCode, ReplicasBehindError, Session, TokenError } from '@tidemark/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ATTR,
  DB_OPERATION_DURATION_BUCKETS,
  instrumentRouter,
  METRIC,
  type TidemarkInstrumentation,
} from '../../src/index.js';
import {
  type AnyRouter,
  type Engine,
  engineTargets,
  eventually,
  startEngine,
} from '../support/engines.js';
import { OtelHarness, points, total } from '../support/otel.js';

const targets = engineTargets();
const OP = METRIC.operationDuration;

describe.skipIf(targets.length === 0).each(targets)('%s: OpenTelemetry bridge', (target) => {
  let engine: Engine;
  const otel = new OtelHarness();
  const routers: AnyRouter[] = [];
  const bridges: TidemarkInstrumentation[] = [];
  /** Every encoded position a session of these tests held: none may appear in telemetry. */
  const positions = new Set<string>();
  let nextId = 1;

  beforeAll(async () => {
    engine = await startEngine(target);
  }, 240_000);

  afterAll(async () => {
    for (const bridge of bridges) bridge.shutdown();
    for (const router of routers) await router.close().catch(() => undefined);
    await otel.shutdown();
    await engine?.cluster.teardown();
  });

  async function instrumented(
    cluster: string,
    options: Parameters<Engine['router']>[0] = {},
  ): Promise<AnyRouter> {
    const router = engine.router({ cluster, ...options });
    routers.push(router);
    bridges.push(
      instrumentRouter(router, {
        system: engine.system,
        nodes: engine.nodes(),
        meterProvider: otel.meterProvider,
        tracerProvider: otel.tracerProvider,
        tracing: true,
      }),
    );
    await router.ready();
    return router;
  }

  function portOf(target: string): number {
    const node =
      target === 'primary'
        ? engine.cluster.primary()
        : engine.cluster.replicas().find((n) => n.name === target);
    return node!.port;
  }

  async function remember(session: Session, cluster: string): Promise<void> {
    await session.settled(cluster);
    const text = session.toTokenData().positions[cluster];
    if (text !== undefined) positions.add(text);
  }

  it('caught-up replicas: each read is a replica outcome on the node that served it', async () => {
    const router = await instrumented('caught-up');
    const served: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { decision } = await engine.read(router, new Session(), 0);
      served.push(decision.target);
    }
    expect(served.every((t) => t !== 'primary')).toBe(true);
    const metrics = await otel.collect();
    const reads = points(metrics, OP).filter((p) => p.attributes[ATTR.cluster] === 'caught-up');
    expect(reads.reduce((n, p) => n + p.value, 0)).toBe(router.metrics().reads);
    expect(router.metrics().reads).toBe(6);
    for (const point of reads) {
      expect(point.attributes[ATTR.dbSystemName]).toBe(engine.system);
      expect(point.attributes[ATTR.outcome]).toBe('replica');
      expect(point.attributes[ATTR.serverAddress]).toBe('127.0.0.1');
      expect(served.map(portOf)).toContain(point.attributes[ATTR.serverPort]);
      // The buckets the database semantic conventions recommend, not the SDK's defaults.
      expect(point.boundaries).toEqual([...DB_OPERATION_DURATION_BUCKETS]);
    }
    for (const replica of engine.cluster.replicas()) {
      const at = { [ATTR.cluster]: 'caught-up', [ATTR.replica]: replica.name };
      expect(total(metrics, METRIC.replicaReachable, at)).toBe(1);
      expect(total(metrics, METRIC.replicaHealthy, at)).toBe(1);
      expect(total(metrics, METRIC.replicaPaused, at)).toBe(0);
      const age = total(metrics, METRIC.replicaSampleAge, at);
      expect(age).toBeGreaterThanOrEqual(0);
      expect(age).toBeLessThan(5);
      expect(
        points(metrics, METRIC.replicaReachable).find(
          (p) => p.attributes[ATTR.replica] === replica.name,
        )?.attributes[ATTR.serverPort],
      ).toBe(replica.port);
    }
    const spans = otel.spans().filter((s) => s.attributes[ATTR.cluster] === 'caught-up');
    expect(spans).toHaveLength(6);
    for (const [i, span] of spans.entries()) {
      expect(span.kind).toBe(SpanKind.CLIENT);
      expect(span.name).toBe(engine.system);
      expect(span.attributes[ATTR.target]).toBe(served[i]);
      expect(span.attributes[ATTR.serverPort]).toBe(portOf(served[i]!));
      expect(span.attributes[ATTR.reason]).toBe('no-token');
    }
  });

  it('replay paused: own writes are read from the primary, counted as primary_fallback', async () => {
    for (const replica of engine.cluster.replicas()) await engine.cluster.pauseReplay(replica.name);
    const router = await instrumented('paused', { wait: { budgetMs: 50 } });
    // Control: the same workload on a router without the bridge leaves no trace in the SDK.
    const control = engine.router({ cluster: 'control', wait: { budgetMs: 50 } });
    routers.push(control);
    await control.ready();
    for (let i = 0; i < 5; i++) {
      for (const r of [router, control]) {
        const session = new Session();
        const id = nextId++;
        await engine.write(r, session, id);
        const { value, decision } = await engine.read(r, session, id);
        expect(value).toBe(true);
        // primary-no-replica when a loaded machine let the paused replicas' samples age out.
        expect(['primary-fallback', 'primary-no-replica']).toContain(decision.reason);
        await remember(session, r.cluster);
      }
    }
    const metrics = await otel.collect();
    const own = router.metrics();
    const fellBack = own.byReason['primary-fallback'] + own.byReason['primary-no-replica'];
    expect(fellBack).toBe(5);
    const fallback = { [ATTR.cluster]: 'paused', [ATTR.outcome]: 'primary_fallback' };
    expect(total(metrics, OP, fallback)).toBe(fellBack);
    expect(total(metrics, OP, { [ATTR.cluster]: 'paused' })).toBe(own.reads);
    for (const point of points(metrics, OP).filter(
      (p) => p.attributes[ATTR.cluster] === 'paused',
    )) {
      expect(point.attributes[ATTR.serverPort]).toBe(engine.cluster.primary().port);
      expect(['primary-fallback', 'primary-no-replica']).toContain(point.attributes[ATTR.reason]);
    }
    // Where the probe reports replay paused (PostgreSQL, MySQL), no read spends its budget
    // waiting on those replicas; elsewhere each read waits its budget out first.
    const pausedSeen = router.monitor.states().every((state) => state.paused);
    if (pausedSeen) expect(own.waits).toBe(0);
    else expect(own.waits - own.waitsReached).toBe(5);
    expect(total(metrics, METRIC.waitDuration, { [ATTR.cluster]: 'paused' })).toBe(own.waits);
    expect(
      total(metrics, METRIC.waitDuration, {
        [ATTR.cluster]: 'paused',
        [ATTR.waitResult]: 'timeout',
      }),
    ).toBe(own.waits - own.waitsReached);
    expect(control.metrics().primaryReads).toBe(5);
    expect(total(metrics, OP, { [ATTR.cluster]: 'control' })).toBe(0);
    expect(otel.spans().filter((s) => s.attributes[ATTR.cluster] === 'control')).toEqual([]);

    const spans = otel.spans().filter((s) => s.attributes[ATTR.cluster] === 'paused');
    expect(spans).toHaveLength(5);
    for (const span of spans) {
      expect(span.attributes[ATTR.outcome]).toBe('primary_fallback');
      expect(span.attributes[ATTR.target]).toBe('primary');
      // No budget spent on replicas known to be paused, the whole budget otherwise.
      if (pausedSeen) expect(span.attributes[ATTR.waitDuration]).toBeLessThan(0.04);
      else expect(span.attributes[ATTR.waitDuration]).toBeGreaterThanOrEqual(0.045);
      expect(span.attributes[ATTR.stale]).toBe(false);
    }

    // The monitor sees the replicas falling behind the primary it samples (and paused, where
    // the probe tells).
    await eventually('paused replicas to show staleness', async () => {
      const now = await otel.collect();
      return engine.cluster.replicas().every((replica) => {
        const at = { [ATTR.cluster]: 'paused', [ATTR.replica]: replica.name };
        return (
          total(now, METRIC.replicaPaused, at) === (pausedSeen ? 1 : 0) &&
          total(now, METRIC.replicaStaleness, at) > 0
        );
      });
    });
  });

  it('cap spent: degraded_stale under policy stale, error outcome under policy error', async () => {
    const stale = await instrumented('stale', {
      wait: { budgetMs: 20 },
      fallback: { enabled: false },
      degraded: 'stale',
    });
    const refuse = await instrumented('refuse', {
      wait: { budgetMs: 20 },
      fallback: { enabled: false },
      degraded: 'error',
    });
    for (let i = 0; i < 3; i++) {
      const session = new Session();
      const id = nextId++;
      await engine.write(stale, session, id);
      const { value, decision } = await engine.read(stale, session, id);
      // A paused replica served the read: the row is missing, and the decision says so.
      expect(value).toBe(false);
      expect(decision.reason).toBe('degraded-stale');
      await remember(session, 'stale');
    }
    const session = new Session();
    await engine.write(refuse, session, nextId++);
    await remember(session, 'refuse');
    const error = await engine.read(refuse, session, 0).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReplicasBehindError);

    const metrics = await otel.collect();
    expect(total(metrics, OP, { [ATTR.cluster]: 'stale', [ATTR.outcome]: 'degraded_stale' })).toBe(
      stale.metrics().byReason['degraded-stale'],
    );
    expect(stale.metrics().byReason['degraded-stale']).toBe(3);
    expect(total(metrics, METRIC.capRejections, { [ATTR.cluster]: 'stale' })).toBe(
      stale.metrics().capRejections,
    );
    expect(total(metrics, METRIC.capRejections, { [ATTR.cluster]: 'refuse' })).toBe(1);
    const failed = points(metrics, OP).filter((p) => p.attributes[ATTR.cluster] === 'refuse');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.attributes[ATTR.outcome]).toBe('error');
    expect(failed[0]!.attributes[ATTR.errorType]).toBe(ErrorCode.ReplicasBehind);
    expect(failed[0]!.value).toBe(1);
    const span = otel.spans().find((s) => s.attributes[ATTR.cluster] === 'refuse');
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
    expect(span?.attributes[ATTR.errorType]).toBe(ErrorCode.ReplicasBehind);
    expect(
      otel
        .spans()
        .filter((s) => s.attributes[ATTR.cluster] === 'stale')
        .map((s) => s.attributes[ATTR.stale]),
    ).toEqual([true, true, true]);
  });

  it('replicas applying again: reads right after a write wait for a replica (replica_waited)', async () => {
    for (const replica of engine.cluster.replicas())
      await engine.cluster.resumeReplay(replica.name);
    const router = await instrumented('waited', { wait: { budgetMs: 2_000 } });
    const decisions = [];
    for (let i = 0; i < 5; i++) {
      const session = new Session();
      const id = nextId++;
      await engine.write(router, session, id);
      // The monitor's last sample predates the write, so the replica must be waited for.
      const { value, decision } = await engine.read(router, session, id);
      expect(value).toBe(true);
      decisions.push(decision);
      await remember(session, 'waited');
    }
    const own = router.metrics();
    expect(own.byReason['replica-waited']).toBeGreaterThanOrEqual(1);
    const metrics = await otel.collect();
    const at = { [ATTR.cluster]: 'waited' };
    expect(total(metrics, OP, { ...at, [ATTR.outcome]: 'replica_waited' })).toBe(
      own.byReason['replica-waited'],
    );
    expect(total(metrics, OP, at)).toBe(5);
    for (const point of points(metrics, OP).filter(
      (p) => p.attributes[ATTR.cluster] === 'waited',
    )) {
      if (point.attributes[ATTR.outcome] === 'replica_waited') {
        const replica = engine.cluster
          .replicas()
          .find((n) => n.port === point.attributes[ATTR.serverPort]);
        expect(replica).toBeDefined();
      }
    }
    expect(total(metrics, METRIC.waitDuration, { ...at, [ATTR.waitResult]: 'reached' })).toBe(
      own.waitsReached,
    );
    expect(total(metrics, METRIC.waitDuration, at)).toBe(own.waits);
    const waitedSeconds = points(metrics, METRIC.waitDuration)
      .filter((p) => p.attributes[ATTR.cluster] === 'waited')
      .reduce((sum, p) => sum + (p.sum ?? 0), 0);
    expect(waitedSeconds).toBeCloseTo(own.waitMsTotal / 1000, 6);
    const spans = otel.spans().filter((s) => s.attributes[ATTR.cluster] === 'waited');
    expect(spans.map((s) => s.attributes[ATTR.reason])).toEqual(decisions.map((d) => d.reason));
    for (const [i, span] of spans.entries()) {
      const decision = decisions[i]!;
      expect(span.attributes[ATTR.target]).toBe(decision.target);
      expect(span.attributes[ATTR.waitDuration]).toBeCloseTo(decision.waitedMs / 1000, 6);
      // The span covers the whole read, so it lasts at least as long as the routing wait.
      const durationMs = span.duration[0] * 1000 + span.duration[1] / 1e6;
      expect(durationMs).toBeGreaterThanOrEqual(decision.waitedMs - 1);
    }
  });

  it('replicas cut off from the primary: the bounded wait times out, then the primary serves', async () => {
    const router = await instrumented('cut-off', { wait: { budgetMs: 100 } });
    const replicas = engine.cluster.replicas();
    for (const replica of replicas) await engine.cluster.cutOff(replica.name);
    try {
      const decisions = [];
      for (let i = 0; i < 3; i++) {
        const session = new Session();
        const id = nextId++;
        await engine.write(router, session, id);
        const { value, decision } = await engine.read(router, session, id);
        expect(value).toBe(true);
        decisions.push(decision);
        await remember(session, 'cut-off');
      }
      // Still applying as far as the monitor can tell (not paused), so the budget is spent.
      expect(decisions.map((d) => d.reason)).toEqual(Array(3).fill('primary-fallback'));
      for (const decision of decisions) expect(decision.waitedMs).toBeGreaterThanOrEqual(90);
      const own = router.metrics();
      const metrics = await otel.collect();
      const at = { [ATTR.cluster]: 'cut-off' };
      expect(own.waits - own.waitsReached).toBe(3);
      expect(total(metrics, METRIC.waitDuration, { ...at, [ATTR.waitResult]: 'timeout' })).toBe(3);
      const waited = points(metrics, METRIC.waitDuration)
        .filter((p) => p.attributes[ATTR.cluster] === 'cut-off')
        .reduce((sum, p) => sum + (p.sum ?? 0), 0);
      expect(waited).toBeCloseTo(own.waitMsTotal / 1000, 6);
      expect(waited).toBeGreaterThanOrEqual(0.27);
      expect(total(metrics, OP, { ...at, [ATTR.outcome]: 'primary_fallback' })).toBe(3);
    } finally {
      for (const replica of replicas) await engine.cluster.reconnect(replica.name);
    }
  });

  it('bad tokens: counted with their code, the read is an error outcome', async () => {
    const router = await instrumented('tokens');
    // Characters no adapter's position text allows ('not-a-position' is valid base-36 MariaDB).
    const forged = Session.fromToken({ positions: { tokens: 'forged position!' }, issuedAt: 0 });
    const error = await engine.read(router, forged, 0).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenError);
    const metrics = await otel.collect();
    expect(total(metrics, METRIC.badTokens, { [ATTR.cluster]: 'tokens' })).toBe(
      router.metrics().badTokens,
    );
    expect(
      total(metrics, METRIC.badTokens, {
        [ATTR.cluster]: 'tokens',
        [ATTR.errorType]: (error as TokenError).code,
      }),
    ).toBe(1);
    expect(total(metrics, OP, { [ATTR.cluster]: 'tokens', [ATTR.outcome]: 'error' })).toBe(1);
  });

  it('never exports a token or a position', async () => {
    expect(positions.size).toBeGreaterThanOrEqual(5);
    const values: string[] = [];
    for (const metric of await otel.collect()) {
      for (const point of metric.dataPoints)
        values.push(...Object.values(point.attributes).map(String));
    }
    for (const span of otel.spans())
      values.push(...Object.values(span.attributes).map(String), span.name);
    expect(values.length).toBeGreaterThan(100);
    for (const position of positions) {
      expect(values.filter((v) => v.includes(position))).toEqual([]);
    }
    expect(values.filter((v) => v.includes('forged position!'))).toEqual([]);
  });

  it("a read span's parent is the caller's active span", async () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const router = await instrumented('parent');
      const tracer = otel.tracerProvider.getTracer('test');
      const request = tracer.startSpan('GET /books');
      await context.with(trace.setSpan(context.active(), request), () =>
        engine.read(router, new Session(), 0),
      );
      request.end();
      const span = otel.spans().find((s) => s.attributes[ATTR.cluster] === 'parent')!;
      expect(span.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(request.spanContext().traceId);
    } finally {
      context.disable();
    }
  });

  it("a read span starts and ends within the caller's span, even a read begun in the caller's first millisecond", async () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const router = await instrumented('nested');
      const tracer = otel.tracerProvider.getTracer('test');
      const requests: Array<ReturnType<typeof tracer.startSpan>> = [];
      // The SDK stamps a span's start in whole milliseconds; a read that begins within the same
      // millisecond as its caller's span is where a start computed from the read's duration
      // could land before the caller's.
      for (let i = 0; i < 40; i++) {
        const request = tracer.startSpan(`GET /books ${i}`);
        await context.with(trace.setSpan(context.active(), request), () =>
          engine.read(router, new Session(), 0),
        );
        request.end();
        requests.push(request);
      }
      const spans = otel.spans();
      const early: string[] = [];
      for (const request of requests) {
        const parent = spans.find((s) => s.spanContext().spanId === request.spanContext().spanId)!;
        const child = spans.find(
          (s) => s.parentSpanContext?.spanId === parent.spanContext().spanId,
        )!;
        expect(child.attributes[ATTR.cluster]).toBe('nested');
        expect(nanos(child.startTime)).toBeLessThanOrEqual(nanos(child.endTime));
        if (nanos(child.startTime) < nanos(parent.startTime)) early.push(parent.name);
      }
      expect(early).toEqual([]);
    } finally {
      context.disable();
    }
  });

  it('bad configuration is a typed error at startup', async () => {
    const router = engine.router({ cluster: 'config' });
    routers.push(router);
    const attempt = (options: Parameters<typeof instrumentRouter>[1]) => {
      try {
        instrumentRouter(router, options);
      } catch (error) {
        return error;
      }
      return undefined;
    };
    // @ts-expect-error: a system Tidemark has no adapter for
    const unknownSystem = attempt({ system: 'oracle' });
    expect(unknownSystem).toBeInstanceOf(ConfigError);
    expect((unknownSystem as ConfigError).code).toBe(ErrorCode.Config);
    const badNode = attempt({ system: engine.system, nodes: { primary: 'no url' } });
    expect((badNode as ConfigError).code).toBe(ErrorCode.Config);
    const unknownNode = attempt({
      system: engine.system,
      nodes: { replica1: engine.cluster.primary().url },
    });
    expect(unknownNode).toBeInstanceOf(ConfigError);
    expect((unknownNode as Error).message).toContain('replica1');
  });

  it('tracing is opt-in: metrics alone by default', async () => {
    const router = engine.router({ cluster: 'untraced' });
    routers.push(router);
    bridges.push(
      instrumentRouter(router, {
        system: engine.system,
        meterProvider: otel.meterProvider,
        tracerProvider: otel.tracerProvider,
      }),
    );
    await router.ready();
    await engine.read(router, new Session(), 0);
    const metrics = await otel.collect();
    expect(total(metrics, OP, { [ATTR.cluster]: 'untraced' })).toBe(1);
    // Without nodes, no server.* rather than a guess.
    const point = points(metrics, OP).find((p) => p.attributes[ATTR.cluster] === 'untraced')!;
    expect(point.attributes[ATTR.serverAddress]).toBeUndefined();
    expect(otel.spans().filter((s) => s.attributes[ATTR.cluster] === 'untraced')).toEqual([]);
  });

  it('after shutdown() the router reports nothing more', async () => {
    const router = await instrumented('stopped');
    await engine.read(router, new Session(), 0);
    bridges.at(-1)!.shutdown();
    await engine.read(router, new Session(), 0);
    const metrics = await otel.collect();
    expect(router.metrics().reads).toBe(2);
    expect(total(metrics, OP, { [ATTR.cluster]: 'stopped' })).toBe(1);
    expect(
      points(metrics, METRIC.replicaReachable).filter(
        (p) => p.attributes[ATTR.cluster] === 'stopped',
      ),
    ).toEqual([]);
  });
});

/** An OpenTelemetry time as nanoseconds since the epoch, for ordering. */
function nanos([seconds, nanoseconds]: readonly [number, number]): bigint {
  return BigInt(seconds) * 1_000_000_000n + BigInt(nanoseconds);
}
