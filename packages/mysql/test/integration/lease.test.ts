/**
 * Leases over a real MySQL or MariaDB primary and two GTID replicas: each round writes a row
 * through a write lease and reads it back at once through a read lease of the same session, with
 * the appliers stopped, then delayed. The controls (a read lease without the token, a plain
 * replica read) must miss rows that the session's read lease never misses.
 */
import { ErrorCode, Router, Session } from '@tidemark/core';
import { type Cluster, runLeaseWorkload } from '@tidemark/test-clusters';
import type { PoolConnection } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adapterFor,
  eventually,
  flavourOf,
  hasItem,
  type LooseAdapter,
  mysqlTargets,
  setApplyDelay,
  startItemsCluster,
  waitForMonitorToSeeAppliersRunning,
  waitForReplicasToCatchUp,
} from './support.js';

const targets = mysqlTargets();

describe.skipIf(targets.length === 0).each(targets)('%s: leases over the adapter', (target) => {
  let cluster: Cluster;
  let adapter: LooseAdapter;
  // biome-ignore lint/suspicious/noExplicitAny: one router type for both flavours' positions.
  let router: Router<any, PoolConnection>;
  let naive: LooseAdapter;
  let firstId = 1;

  /** `rounds` of the shared workload; the plain replica read alternates between the replicas. */
  const measure = async (rounds: number) => {
    const result = await runLeaseWorkload<Session, PoolConnection>({
      router,
      newSession: () => new Session(),
      rounds,
      firstId,
      insert: (c, id) => c.query('INSERT INTO items VALUES (?)', [id]),
      hasRow: hasItem,
      replicaHasRow: async (id, round) => {
        const replica = naive.replicas[round % naive.replicas.length]!;
        return (await naive.read(replica, (c) => hasItem(c, id), {})).value;
      },
    });
    firstId += rounds;
    return result;
  };

  beforeAll(async () => {
    cluster = await startItemsCluster(target);
    adapter = adapterFor(cluster, target);
    naive = adapterFor(cluster, target);
    await waitForReplicasToCatchUp(cluster, adapter);
    router = new Router({
      adapter,
      cluster: 'main',
      monitorOptions: { intervalMs: 50 },
      wait: { budgetMs: 4000 },
    });
    await router.ready();
  }, 180_000);

  afterAll(async () => {
    await naive?.close();
    await router?.close();
    await cluster?.teardown();
  });

  it('appliers stopped: write lease + read lease never miss; the controls do', async () => {
    for (const node of cluster.replicas()) await cluster.pauseReplay(node.name);
    try {
      await eventually('the monitor to see the stopped appliers', async () =>
        router.monitor.states().every((state) => state.paused) ? true : undefined,
      );
      const result = await measure(20);
      console.log(`[${target}] leases, appliers stopped: ${JSON.stringify(result)}`);
      expect(result.missed).toBe(0);
      expect(result.tokenDiscardedMissed).toBeGreaterThan(0);
      expect(result.replicaMissed).toBeGreaterThan(0);
    } finally {
      for (const node of cluster.replicas()) await cluster.resumeReplay(node.name);
      await waitForMonitorToSeeAppliersRunning(router.monitor);
    }
  });

  it('appliers delayed: the read lease waits for a replica (or falls back); the controls miss', async () => {
    await waitForReplicasToCatchUp(cluster, adapter);
    // MariaDB's delay counts from whole-second event timestamps: 1 s can end at once.
    const delaySeconds = flavourOf(target) === 'mysql' ? 1 : 2;
    await setApplyDelay(cluster, target, delaySeconds);
    await waitForMonitorToSeeAppliersRunning(router.monitor);
    try {
      const result = await measure(5);
      console.log(
        `[${target}] leases, appliers delayed ${delaySeconds} s: ${JSON.stringify(result)}`,
      );
      expect(result.missed).toBe(0);
      expect(result.tokenDiscardedMissed).toBeGreaterThan(0);
      expect(result.replicaMissed).toBeGreaterThan(0);
      expect(Object.keys(result.routes).some((route) => route.endsWith(':replica-waited'))).toBe(
        true,
      );
    } finally {
      await setApplyDelay(cluster, target, 0);
    }
  });

  it('a revoked write lease is rolled back on the server; release() says so', async () => {
    const id = firstId++;
    const session = new Session();
    const lease = await router.acquire(session, 'write', { maxHoldMs: 200 });
    await lease.connection.query('INSERT INTO items VALUES (?)', [id]);
    await eventually('the lease to be revoked', async () =>
      lease.state === 'revoked' ? true : undefined,
    );
    await expect(lease.release()).rejects.toMatchObject({ code: ErrorCode.LeaseRevoked });
    expect(() => lease.connection.query('SELECT 1')).toThrow(/revoked/);
    expect(session.clusters()).toEqual([]);
    // On the primary, where a committed row would be at once.
    const check = await router.acquire(new Session(), 'write');
    expect(await hasItem(check.connection, id)).toBe(false);
    await check.release();
  });
});
