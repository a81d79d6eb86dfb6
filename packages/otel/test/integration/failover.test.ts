import { ErrorCode, OtherHistoryError, Session } from '@tidemark/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, instrumentRouter, METRIC, type TidemarkInstrumentation } from '../../src/index.js';
import { type AnyRouter, type Engine, engineTargets, startEngine } from '../support/engines.js';
import { OtelHarness, total } from '../support/otel.js';

const targets = engineTargets();

/**
 * A write lost in a failover: both replicas are killed, the primary commits one more row, then
 * a replica is promoted. The session holding that row's position is from another history: its
 * reads are refused and counted, and its next write reports the lost one.
 */
describe.skipIf(targets.length === 0).each(targets)('%s: bridge across a failover', (target) => {
  let engine: Engine;
  const otel = new OtelHarness();
  const routers: AnyRouter[] = [];
  const bridges: TidemarkInstrumentation[] = [];
  let reader: Session;
  let writer: Session;

  beforeAll(async () => {
    engine = await startEngine(target);
    const old = engine.router({ cluster: 'failover' });
    try {
      await old.ready();
      await engine.write(old, new Session(), 1);
      const [n1, n2] = engine.cluster.replicas();
      const oldPrimary = engine.cluster.primary().name;
      // Both replicas down before the write: a running (even paused) replica would apply it
      // while being promoted. The follower first, so it never gets ahead of the promoted one.
      await engine.cluster.kill(n2!.name);
      await engine.cluster.kill(n1!.name);
      reader = new Session();
      await engine.write(old, reader, 2);
      await reader.settled('failover');
      writer = Session.fromToken({ ...reader.toTokenData(), issuedAt: Date.now() });
      await engine.cluster.kill(oldPrimary);
      await engine.cluster.start(n1!.name);
      await engine.cluster.promote(n1!.name);
      await engine.cluster.start(n2!.name);
    } finally {
      await old.close();
    }
  }, 240_000);

  afterAll(async () => {
    for (const bridge of bridges) bridge.shutdown();
    for (const router of routers) await router.close().catch(() => undefined);
    await otel.shutdown();
    await engine?.cluster.teardown();
  });

  /** The application reconfigured after the failover, instrumented. */
  async function instrumented(): Promise<AnyRouter> {
    const router = engine.router({ cluster: 'failover' });
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

  it('a read with a lost position: other-history counted, error outcome with its code', async () => {
    const router = await instrumented();
    const error = await engine.read(router, reader, 2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OtherHistoryError);
    const metrics = await otel.collect();
    expect(router.metrics().otherHistory).toBe(1);
    expect(total(metrics, METRIC.otherHistoryTokens, { [ATTR.cluster]: 'failover' })).toBe(1);
    expect(
      total(metrics, METRIC.operationDuration, {
        [ATTR.outcome]: 'error',
        [ATTR.errorType]: ErrorCode.OtherHistory,
      }),
    ).toBe(1);
  });

  it('a write after a lost one: lost write counted with its verdict', async () => {
    const router = routers[0]!;
    const { lostWrite } = await engine.writeDetailed(router, writer, 3);
    expect(lostWrite?.verdict).toBe('other-history');
    const metrics = await otel.collect();
    expect(router.metrics().lostWrites).toBe(1);
    expect(
      total(metrics, METRIC.lostWrites, {
        [ATTR.cluster]: 'failover',
        [ATTR.lostWriteVerdict]: 'other-history',
      }),
    ).toBe(1);
  });
});
