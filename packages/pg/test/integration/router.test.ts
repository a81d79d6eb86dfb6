import { PRIMARY, Router, Session } from '@tidemark/core';
import {
  type Cluster,
  replicaReads,
  runMonotonicReads,
  runReadYourWrites,
} from '@tidemark/test-clusters';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PgAdapter, PgPosition } from '../../src/index.js';
import {
  adapterFor,
  eventually,
  hasItem,
  majorOf,
  pgTargets,
  startItemsCluster,
  waitForReplicasToCatchUp,
} from './support.js';

const targets = pgTargets();
const ROUNDS = 30;

describe.skipIf(targets.length === 0).each(targets)('%s: Router over the adapter', (target) => {
  let cluster: Cluster;
  let replicas: string[];
  let router: Router<PgPosition, pg.PoolClient>;
  let nextId = 1;

  const hasRow = hasItem;
  // A function: the router exists only once beforeAll has run.
  const workload = () => ({
    router,
    primary: PRIMARY,
    newSession: () => new Session(),
    rounds: ROUNDS,
    nextId: () => nextId++,
    write: (session: Session, id: number) =>
      router.write(session, (c) => c.query('INSERT INTO items VALUES ($1)', [id])),
    hasRow,
  });

  beforeAll(async () => {
    cluster = await startItemsCluster(target);
    replicas = cluster.replicas().map((node) => node.name);
    router = new Router({
      adapter: adapterFor(cluster),
      cluster: 'main',
      monitorOptions: { intervalMs: 50 },
      fallback: { ratePerSecond: 1000, burst: 1000 },
    });
    await router.ready();
  }, 180_000);

  afterAll(async () => {
    await router?.close();
    await cluster?.teardown();
  });

  it('reads your writes with replay paused on every replica (fallback), a naive replica read does not', async () => {
    for (const name of replicas) await cluster.pauseReplay(name);
    const naive = adapterFor(cluster);
    try {
      await eventually('the monitor to see the pause', async () =>
        router.monitor.states().every((state) => state.paused) ? true : undefined,
      );
      const result = await runReadYourWrites({
        ...workload(),
        // Control: the same read sent straight to a replica, no token.
        replicaHasRow: async (id, round) =>
          (await naive.read(replicas[round % replicas.length]!, (c) => hasRow(c, id), {})).value,
      });
      console.log(
        `[${target}] replay paused, ${ROUNDS} write-then-read rounds: router misses ${result.missed} (targets ${result.targets.join(',')}), naive replica read misses ${result.replicaMissed}`,
      );
      expect(result.missed).toBe(0);
      expect(result.replicaMissed).toBe(ROUNDS);
      expect(result.targets).toEqual([PRIMARY]);
    } finally {
      await naive.close();
      for (const name of replicas) await cluster.resumeReplay(name);
    }
  });

  it('reads your writes from the replicas when they keep up', async () => {
    await waitForReplicasToCatchUp(cluster);
    await eventually('the monitor to see replay resumed', async () =>
      router.monitor.states().every((state) => !state.paused && state.reachable) ? true : undefined,
    );
    const result = await runReadYourWrites(workload());
    console.log(
      `[${target}] replay running, ${ROUNDS} rounds: misses ${result.missed}, decisions ${JSON.stringify(result.routes)}, mean wait ${(result.waitedMs / ROUNDS).toFixed(1)} ms`,
    );
    expect(result.missed).toBe(0);
    expect(replicaReads(result)).toBeGreaterThan(ROUNDS / 2);
  });

  it(`waits for a delayed replica (${majorOf(target) >= 19 ? 'WAIT FOR LSN' : 'polling'})`, async () => {
    for (const name of replicas) {
      await cluster.exec(name, "ALTER SYSTEM SET recovery_min_apply_delay = '300ms'");
      await cluster.exec(name, 'SELECT pg_reload_conf()');
    }
    const waits: Array<{ serverSide: boolean; reached: boolean; waitedMs: number }> = [];
    const off = router.events.on('wait', (event) => {
      waits.push(event);
    });
    const delayed = new Router({
      adapter: adapterFor(cluster),
      cluster: 'main',
      monitorOptions: { intervalMs: 50 },
      wait: { budgetMs: 2000 },
    });
    const delayedWaits: Array<{ serverSide: boolean; reached: boolean; waitedMs: number }> = [];
    delayed.events.on('wait', (event) => {
      delayedWaits.push(event);
    });
    try {
      await delayed.ready();
      const id = nextId++;
      const session = new Session();
      await delayed.write(session, (c) => c.query('INSERT INTO items VALUES ($1)', [id]));
      const read = await delayed.readDetailed(session, (c) => hasRow(c, id));
      console.log(
        `[${target}] replicas delayed 300 ms: ${read.decision.reason} on ${read.decision.target} after ${Math.round(read.decision.waitedMs)} ms, server-side ${delayedWaits[0]?.serverSide}`,
      );
      expect(read.value).toBe(true);
      expect(read.decision.reason).toBe('replica-waited');
      expect(read.decision.waitedMs).toBeGreaterThan(100);
      expect(read.decision.waitedMs).toBeLessThan(2000);
      expect(delayedWaits).toHaveLength(1);
      expect(delayedWaits[0]!.serverSide).toBe(majorOf(target) >= 19);
      expect(delayedWaits[0]!.reached).toBe(true);
    } finally {
      off();
      await delayed.close();
      for (const name of replicas) {
        await cluster.exec(name, 'ALTER SYSTEM RESET recovery_min_apply_delay');
        await cluster.exec(name, 'SELECT pg_reload_conf()');
      }
    }
    expect(waits).toHaveLength(0);
  });

  it('settles what a read observed with an observation of its replica, not a full probe', async () => {
    await waitForReplicasToCatchUp(cluster);
    const adapter = adapterFor(cluster);
    const calls = { probe: 0, observe: 0 };
    const probe = adapter.probe.bind(adapter);
    adapter.probe = (id, context) => {
      calls.probe++;
      return probe(id, context);
    };
    const observe = adapter.observe.bind(adapter);
    adapter.observe = (id, context) => {
      calls.observe++;
      return observe(id, context);
    };
    const counting = quietRouter(adapter);
    try {
      await counting.ready();
      const session = new Session();
      const read = await counting.readDetailed(session, (c) => hasRow(c, 1));
      expect(read.decision.target).not.toBe(PRIMARY);
      expect(session.unsettled).toBe(true);
      const before = { ...calls };
      await session.settled();
      expect(calls.observe - before.observe).toBe(1);
      expect(calls.probe - before.probe).toBe(0);
      expect(session.position('main', adapter.codec)?.timeline).toBe(1);
    } finally {
      await counting.close();
    }
  });

  it('with pipelineCapture, an autocommit write leaves no position to settle; without it, one primary probe settles it', async () => {
    await waitForReplicasToCatchUp(cluster);
    for (const pipelineCapture of [true, false]) {
      const adapter = adapterFor(cluster, { pipelineCapture });
      let primaryProbes = 0;
      const probePrimary = adapter.probePrimary.bind(adapter);
      adapter.probePrimary = (context) => {
        primaryProbes++;
        return probePrimary(context);
      };
      const counting = quietRouter(adapter);
      try {
        await counting.ready();
        const id = nextId++;
        const session = new Session();
        const before = primaryProbes;
        await counting.write(session, (c) => c.query('INSERT INTO items VALUES ($1)', [id]), {
          transaction: false,
        });
        expect(session.unsettled).toBe(!pipelineCapture);
        await session.settled();
        expect(primaryProbes - before).toBe(pipelineCapture ? 0 : 1);
        // Either way the position covers the row: a read through the router finds it.
        const read = await counting.readDetailed(session, (c) => hasRow(c, id));
        expect(read.value).toBe(true);
      } finally {
        await counting.close();
      }
    }
  });

  it("with settle: 'immediate', a replica read returns its position with the read (no probe, no round trip of its own); deferred settling needs a probe", async () => {
    await waitForReplicasToCatchUp(cluster);
    const id = nextId++;
    await cluster.exec(cluster.primary().name, `INSERT INTO items VALUES (${id})`);
    await waitForReplicasToCatchUp(cluster);
    for (const settle of ['immediate', 'deferred'] as const) {
      const adapter = adapterFor(cluster);
      expect(adapter.observesWithRead).toBe(true);
      let observations = 0;
      const observe = adapter.observe.bind(adapter);
      adapter.observe = (replicaId, context) => {
        observations++;
        return observe(replicaId, context);
      };
      const counting = new Router({
        adapter,
        cluster: 'main',
        monitorOptions: { intervalMs: 60_000 },
        settle,
      });
      try {
        await counting.ready();
        const session = new Session();
        const before = adapter.roundTrips();
        const observedBefore = observations;
        // Two statements in the callback, one of them while the other is in flight.
        const read = await counting.readDetailed(session, async (c) => {
          const [found] = await Promise.all([hasRow(c, id), c.query('SELECT 1')]);
          return found && (await hasRow(c, id));
        });
        await session.settled();
        const after = adapter.roundTrips();
        expect(read.value).toBe(true);
        expect(read.decision.target).not.toBe(PRIMARY);
        expect(session.unsettled).toBe(false);
        // The session now holds what the replica had applied after the read: at least the row.
        const position = session.position('main', adapter.codec);
        expect(position).toBeDefined();
        const primary = await adapter.probePrimary({ signal: new AbortController().signal });
        expect(adapter.codec.compare(primary, position!)).toBe('covered');
        // The callback's own 3 statements only, either way: with `immediate` the position rode
        // behind them; deferred, it came from one observation on a monitor connection.
        expect(after.readRoundTrips - before.readRoundTrips).toBe(3);
        expect(observations - observedBefore).toBe(settle === 'immediate' ? 0 : 1);
      } finally {
        await counting.close();
      }
    }
  });

  it('keeps reads monotonic: after seeing a row on one replica, never reads a replica without it', async () => {
    const [ahead, behind] = replicas as [string, string];
    await waitForReplicasToCatchUp(cluster);
    await cluster.pauseReplay(behind);
    const naive = adapterFor(cluster);
    try {
      const id = nextId++;
      // Someone else's write: the session has no token for it.
      await cluster.exec(cluster.primary().name, `INSERT INTO items VALUES (${id})`);
      const result = await runMonotonicReads({
        router,
        newSession: () => new Session(),
        ahead,
        behind,
        id,
        hasRow,
        replicaHasRow: async (replica, row) =>
          (await naive.read(replica, (c) => hasRow(c, row), {})).value,
        rounds: 10,
      });
      // The session's token covers the row after the first read: no later read may miss it.
      expect(result.firstSaw).toBe(true);
      expect(result.readBehind).toBe(0);
      expect(result.behindHasRow).toBe(false);
      expect(result.missed).toBe(0);
    } finally {
      await naive.close();
      await cluster.resumeReplay(behind);
    }
  });
});

/** No background sampling: every adapter call a test counts is one the test caused. */
function quietRouter(adapter: PgAdapter): Router<PgPosition, pg.PoolClient> {
  return new Router({ adapter, cluster: 'main', monitorOptions: { intervalMs: 60_000 } });
}
