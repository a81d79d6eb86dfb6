import { type Cluster, checkObservation } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRetryablePgError, type PgAdapter } from '../../src/index.js';
import {
  adapterFor,
  eventually,
  majorOf,
  noSignal,
  pgTargets,
  sleep,
  startPgCluster,
  waitForReplicasToCatchUp,
} from './support.js';

const targets = pgTargets();

describe.skipIf(targets.length === 0).each(targets)('%s: probes and waits', (target) => {
  let cluster: Cluster;
  let adapter: PgAdapter;
  let n1: string;
  let n2: string;
  let nextId = 1;

  const insert = () =>
    adapter.write((c) => c.query('INSERT INTO items VALUES ($1)', [nextId++]), {});

  beforeAll(async () => {
    cluster = await startPgCluster(target, 2);
    [n1, n2] = cluster.replicas().map((node) => node.name) as [string, string];
    await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
    await waitForReplicasToCatchUp(cluster);
    adapter = adapterFor(cluster);
  }, 180_000);

  afterAll(async () => {
    await adapter?.close();
    await cluster?.teardown();
  });

  it('probes the primary: insert position and timeline 1', async () => {
    const { position } = await insert();
    const primary = await adapter.probePrimary({ signal: noSignal() });
    expect(primary.timeline).toBe(1);
    expect(adapter.codec.compare(primary, position)).toBe('covered');
  });

  it('probes an idle replica in one query: caught up, not paused, no lag', async () => {
    await insert();
    await waitForReplicasToCatchUp(cluster);
    const result = await eventually('replica and primary to agree', async () => {
      const primary = await adapter.probePrimary({ signal: noSignal() });
      const probe = await adapter.probe(n1, { signal: noSignal(), primary });
      return probe.lagBytes === 0 ? { probe, primary } : undefined;
    });
    expect(result.probe.paused).toBe(false);
    expect(result.probe.lagSeconds).toBe(0);
    expect(result.probe.applied).toEqual(result.primary);
  });

  it('observes a replica position alone: what the probe says, and never behind a write it replayed', async () => {
    const check = await checkObservation({
      adapter,
      cluster,
      replica: n1,
      write: async () => (await insert()).position,
      caughtUp: () => waitForReplicasToCatchUp(cluster),
    });
    expect(check.observed.timeline).toBe(1);
    expect([check.probeVsObserved, check.observedVsProbe]).toEqual(['covered', 'covered']);
    // The control: with replay paused, a new write is not in what the replica reports.
    expect(check.pausedVsUnseen).toBe('behind');
  });

  it('sees a paused replica: paused, growing lag in seconds, lag in bytes', async () => {
    await cluster.pauseReplay(n1);
    try {
      await insert();
      const primary1 = await adapter.probePrimary({ signal: noSignal() });
      const first = await adapter.probe(n1, { signal: noSignal(), primary: primary1 });
      expect(first.paused).toBe(true);
      expect(first.lagBytes).toBeGreaterThan(0);
      expect(adapter.codec.compare(first.applied, primary1)).toBe('behind');
      await sleep(1200);
      await insert();
      const primary2 = await adapter.probePrimary({ signal: noSignal() });
      const second = await adapter.probe(n1, { signal: noSignal(), primary: primary2 });
      console.log(
        `[${target}] paused replica: lag ${first.lagSeconds?.toFixed(3)} s / ${first.lagBytes} B, 1.2 s later ${second.lagSeconds?.toFixed(3)} s / ${second.lagBytes} B`,
      );
      expect(second.paused).toBe(true);
      expect(second.lagSeconds).toBeGreaterThan((first.lagSeconds ?? 0) + 1);
      expect(second.lagBytes).toBeGreaterThan(first.lagBytes ?? 0);
      // The other replica kept replaying.
      const other = await eventually('the other replica to catch up', async () => {
        const probe = await adapter.probe(n2, { signal: noSignal(), primary: primary2 });
        return adapter.codec.compare(probe.applied, primary2) === 'covered' ? probe : undefined;
      });
      expect(other.paused).toBe(false);
    } finally {
      await cluster.resumeReplay(n1);
    }
    const primary = await adapter.probePrimary({ signal: noSignal() });
    const resumed = await eventually('the replica to catch up after resume', async () => {
      const probe = await adapter.probe(n1, { signal: noSignal(), primary });
      return adapter.codec.compare(probe.applied, primary) === 'covered' ? probe : undefined;
    });
    expect(resumed.paused).toBe(false);
  });

  it('reports a stopped replica as a retryable failure, and recovers when it is back', async () => {
    await cluster.stop(n2);
    try {
      let failure: unknown;
      await adapter.probe(n2, { signal: noSignal(), primary: undefined }).catch((error) => {
        failure = error;
      });
      expect(failure).toBeDefined();
      expect(isRetryablePgError(failure)).toBe(true);
    } finally {
      await cluster.start(n2);
    }
    const probe = await eventually('the replica to answer again', () =>
      adapter.probe(n2, { signal: noSignal(), primary: undefined }),
    );
    expect(probe.applied.timeline).toBe(1);
  });

  if (majorOf(target) >= 19) {
    it('waits server-side with WAIT FOR LSN (PostgreSQL 19+)', async () => {
      await adapter.probe(n1, { signal: noSignal(), primary: undefined });
      expect(adapter.waitFor).toBeTypeOf('function');
      const waitFor = adapter.waitFor!;
      const { position } = await insert();
      const reached = await waitFor(n1, position, 5000, { signal: noSignal() });
      expect(reached.outcome).toBe('reached');

      await cluster.pauseReplay(n1);
      try {
        const { position: later } = await insert();
        const started = Date.now();
        const timedOut = await waitFor(n1, later, 300, { signal: noSignal() });
        const elapsed = Date.now() - started;
        console.log(
          `[${target}] WAIT FOR LSN with a 300 ms timeout on a paused replica: ${elapsed} ms`,
        );
        expect(timedOut.outcome).toBe('timeout');
        expect(elapsed).toBeGreaterThanOrEqual(280);
        expect(elapsed).toBeLessThan(2000);
        // Resumed while waiting: the wait returns as soon as the position is replayed.
        const waiting = waitFor(n1, later, 10_000, { signal: noSignal() });
        await sleep(200);
        const resumedAt = Date.now();
        await cluster.resumeReplay(n1);
        const outcome = await waiting;
        console.log(
          `[${target}] WAIT FOR LSN returned ${Date.now() - resumedAt} ms after replay resumed`,
        );
        expect(outcome.outcome).toBe('reached');
      } finally {
        await cluster.resumeReplay(n1).catch(() => undefined);
      }
    });

    it("never waits server-side with wait: 'poll'", async () => {
      const polling = adapterFor(cluster, { wait: 'poll' });
      try {
        await polling.probe(n1, { signal: noSignal(), primary: undefined });
        const { position } = await insert();
        expect(await polling.waitFor(n1, position, 1000, { signal: noSignal() })).toEqual({
          outcome: 'unsupported',
        });
      } finally {
        await polling.close();
      }
    });
  } else {
    it('leaves waiting to the router on servers without WAIT FOR LSN', async () => {
      await adapter.probe(n1, { signal: noSignal(), primary: undefined });
      const { position } = await insert();
      // Answered at once, without a round trip: the router polls the probes instead.
      const before = adapter.roundTrips();
      expect(await adapter.waitFor(n1, position, 1000, { signal: noSignal() })).toEqual({
        outcome: 'unsupported',
      });
      expect(adapter.roundTrips()).toEqual(before);
    });
  }
});
