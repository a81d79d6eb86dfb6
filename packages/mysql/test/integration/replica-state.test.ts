import { type Cluster, checkObservation } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createMysqlAdapter,
  GtidSet,
  isRetryableMysqlError,
  MariadbGtidPosition,
  MysqlAdapterError,
  MysqlErrorCode,
} from '../../src/index.js';
import {
  adapterFor,
  eventually,
  flavourOf,
  type LooseAdapter,
  mysqlTargets,
  noSignal,
  sleep,
  startMysqlCluster,
  waitForReplicasToCatchUp,
} from './support.js';

const targets = mysqlTargets();

describe.skipIf(targets.length === 0).each(targets)('%s: probes and waits', (target) => {
  let cluster: Cluster;
  let adapter: LooseAdapter;
  let n1: string;
  let n2: string;
  let nextId = 1;

  const insert = () =>
    adapter.write((c) => c.query('INSERT INTO items VALUES (?)', [nextId++]), {});

  beforeAll(async () => {
    cluster = await startMysqlCluster(target, 2);
    [n1, n2] = cluster.replicas().map((node) => node.name) as [string, string];
    await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
    adapter = adapterFor(cluster, target);
    await waitForReplicasToCatchUp(cluster, adapter);
  }, 180_000);

  afterAll(async () => {
    await adapter?.close();
    await cluster?.teardown();
  });

  it('probes the primary: a position covering its writes, and a clean verdict for them', async () => {
    const { position } = await insert();
    const primary = await adapter.probePrimary({ signal: noSignal() });
    expect(adapter.codec.compare(primary, position)).toBe('covered');
    expect(adapter.classifyAgainstPrimary(primary, position)).toBe('ok');
  });

  it('probes an idle replica in one query: caught up, not paused, no lag', async () => {
    await insert();
    await waitForReplicasToCatchUp(cluster, adapter);
    const primary = await adapter.probePrimary({ signal: noSignal() });
    const probe = await adapter.probe(n1, { signal: noSignal(), primary });
    expect(probe.paused).toBe(false);
    expect(probe.lagSeconds).toBe(0);
    expect(adapter.codec.compare(probe.applied, primary)).toBe('covered');
    expect(adapter.codec.compare(primary, probe.applied)).toBe('covered');
  });

  it('observes a replica position alone: what the probe says, and never behind a write it applied', async () => {
    const check = await checkObservation({
      adapter,
      cluster,
      replica: n1,
      write: async () => (await insert()).position,
      caughtUp: () => waitForReplicasToCatchUp(cluster, adapter),
    });
    expect([check.probeVsObserved, check.observedVsProbe]).toEqual(['covered', 'covered']);
    // The control: with replay stopped, a new write is not in what the replica reports.
    expect(check.pausedVsUnseen).not.toBe('covered');
  });

  it('sees a stopped applier: paused, and lag that grows', async () => {
    await cluster.pauseReplay(n1);
    try {
      await insert();
      const primary1 = await adapter.probePrimary({ signal: noSignal() });
      const first = await adapter.probe(n1, { signal: noSignal(), primary: primary1 });
      expect(first.paused).toBe(true);
      expect(adapter.codec.compare(first.applied, primary1)).toBe('behind');
      await sleep(1200);
      await insert();
      const primary2 = await adapter.probePrimary({ signal: noSignal() });
      const second = await adapter.probe(n1, { signal: noSignal(), primary: primary2 });
      console.log(
        `[${target}] stopped applier: lag ${first.lagSeconds?.toFixed(3)} s, 1.2 s and one more write later ${second.lagSeconds?.toFixed(3)} s`,
      );
      expect(second.paused).toBe(true);
      expect(second.lagSeconds).toBeGreaterThan((first.lagSeconds ?? 0) + 1);
      // The other replica kept applying.
      const other = await eventually('the other replica to catch up', async () => {
        const probe = await adapter.probe(n2, { signal: noSignal(), primary: primary2 });
        return adapter.codec.compare(probe.applied, primary2) === 'covered' ? probe : undefined;
      });
      expect(other.paused).toBe(false);
      expect(other.lagSeconds).toBe(0);
    } finally {
      await cluster.resumeReplay(n1);
    }
    const primary = await adapter.probePrimary({ signal: noSignal() });
    const resumed = await eventually('the replica to catch up after resume', async () => {
      const probe = await adapter.probe(n1, { signal: noSignal(), primary });
      return adapter.codec.compare(probe.applied, primary) === 'covered' ? probe : undefined;
    });
    expect(resumed.paused).toBe(false);
    expect(resumed.lagSeconds).toBe(0);
  });

  it('waits server-side: reached, timeout on a stopped applier, reached right after resume', async () => {
    const { position } = await insert();
    const reached = await adapter.waitFor(n1, position, 5000, { signal: noSignal() });
    expect(reached.outcome).toBe('reached');
    if (reached.outcome === 'reached') {
      expect(adapter.codec.compare(reached.applied, position)).toBe('covered');
    }

    await cluster.pauseReplay(n1);
    try {
      const { position: later } = await insert();
      const started = Date.now();
      const timedOut = await adapter.waitFor(n1, later, 300, { signal: noSignal() });
      const elapsed = Date.now() - started;
      expect(timedOut.outcome).toBe('timeout');
      expect(elapsed).toBeGreaterThanOrEqual(280);
      expect(elapsed).toBeLessThan(2000);
      // A sub-millisecond budget still means a bounded wait: never a timeout of 0 (on MySQL,
      // WAIT_FOR_EXECUTED_GTID_SET(set, 0) blocks forever).
      const tinyStarted = Date.now();
      const tiny = await adapter.waitFor(n1, later, 0.2, { signal: noSignal() });
      const tinyElapsed = Date.now() - tinyStarted;
      expect(tiny.outcome).toBe('timeout');
      expect(tinyElapsed).toBeLessThan(1000);
      const resumedWaiting = adapter.waitFor(n1, later, 10_000, { signal: noSignal() });
      await sleep(200);
      const resumedAt = Date.now();
      await cluster.resumeReplay(n1);
      const outcome = await resumedWaiting;
      const afterResume = Date.now() - resumedAt;
      console.log(
        `[${target}] server-side wait: 300 ms timeout on a stopped applier took ${elapsed} ms; a 0.2 ms budget took ${tinyElapsed} ms; a waiting call returned ${afterResume} ms after the applier restarted`,
      );
      expect(outcome.outcome).toBe('reached');
      expect(afterResume).toBeLessThan(2000);
    } finally {
      await cluster.resumeReplay(n1).catch(() => undefined);
    }
  });

  it('stops a wait when its signal aborts', async () => {
    await cluster.pauseReplay(n1);
    try {
      const { position } = await insert();
      const controller = new AbortController();
      const reason = new Error('read gave up');
      setTimeout(() => controller.abort(reason), 100);
      const started = Date.now();
      await expect(
        adapter.waitFor(n1, position, 10_000, { signal: controller.signal }),
      ).rejects.toBe(reason);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await cluster.resumeReplay(n1);
    }
  });

  it('reports a wait the server refuses as a clear, non-retryable error', async () => {
    // The other flavour's wait SQL does not run on this server (unknown function or variable): a real refusal.
    const wrong = createMysqlAdapter({
      flavour: flavourOf(target) === 'mysql' ? 'mariadb' : 'mysql',
      primary: cluster.primary().url,
      replicas: { [n1]: cluster.replicas()[0]!.url },
    });
    // A position of the wrong adapter's own type.
    const position =
      flavourOf(target) === 'mysql'
        ? MariadbGtidPosition.parse('0-1-1')
        : GtidSet.parse('3e11fa47-71ca-11e1-9e33-c80aa9429562:1');
    try {
      let failure: unknown;
      await wrong.waitFor(n1, position as never, 200, { signal: noSignal() }).catch((error) => {
        failure = error;
      });
      expect(failure).toBeInstanceOf(MysqlAdapterError);
      expect(failure).toMatchObject({ code: MysqlErrorCode.WaitFailed });
      expect(String((failure as Error).message)).toMatch(/ failed on replica "n1" \(error \d{4}: /);
      expect(wrong.isRetryable!(failure)).toBe(false);
    } finally {
      await wrong.close();
    }
  });

  it('reports a stopped replica as a retryable failure, and recovers when it is back', async () => {
    await cluster.stop(n2);
    try {
      let failure: unknown;
      await adapter.probe(n2, { signal: noSignal(), primary: undefined }).catch((error) => {
        failure = error;
      });
      expect(failure).toBeDefined();
      expect(isRetryableMysqlError(failure)).toBe(true);
    } finally {
      await cluster.start(n2);
    }
    const probe = await eventually('the replica to answer again', () =>
      adapter.probe(n2, { signal: noSignal(), primary: undefined }),
    );
    expect(probe.applied).toBeDefined();
  });
});
