/**
 * Leases over a real PostgreSQL primary and two streaming replicas: each round writes a row
 * through a write lease and reads it back at once through a read lease of the same session, with
 * replay paused, then delayed. The controls (a read lease without the token, a plain replica
 * read) must miss rows that the session's read lease never misses.
 */
import { LeaseError, Router, Session } from '@tidemark/core';
import { type Cluster, runLeaseWorkload } from '@tidemark/test-clusters';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PgPosition } from '../../src/index.js';
import {
  adapterFor,
  eventually,
  hasItem,
  pgTargets,
  startItemsCluster,
  waitForReplicasToCatchUp,
} from './support.js';

const targets = pgTargets();
const ROUNDS = 20;

describe.skipIf(targets.length === 0).each(targets)('%s: leases over the adapter', (target) => {
  let cluster: Cluster;
  let replicas: string[];
  let router: Router<PgPosition, pg.PoolClient>;
  let nextId = 1;

  const insert = (c: pg.PoolClient, id: number) => c.query('INSERT INTO items VALUES ($1)', [id]);
  const hasRow = hasItem;

  /** The workload, with a plain replica read (no router) as the second control. */
  const workload = async (rounds: number) => {
    const naive = adapterFor(cluster);
    try {
      const result = await runLeaseWorkload({
        router,
        newSession: () => new Session(),
        rounds,
        firstId: nextId,
        insert,
        hasRow,
        replicaHasRow: async (id, round) =>
          (await naive.read(replicas[round % replicas.length]!, (c) => hasRow(c, id), {})).value,
      });
      nextId += rounds;
      return result;
    } finally {
      await naive.close();
    }
  };

  beforeAll(async () => {
    cluster = await startItemsCluster(target);
    replicas = cluster.replicas().map((node) => node.name);
    router = new Router({
      adapter: adapterFor(cluster),
      cluster: 'main',
      monitorOptions: { intervalMs: 50 },
      wait: { budgetMs: 2000 },
    });
    await router.ready();
  }, 180_000);

  afterAll(async () => {
    await router?.close();
    await cluster?.teardown();
  });

  it('replay paused: write lease + read lease never miss; the controls do', async () => {
    for (const name of replicas) await cluster.pauseReplay(name);
    try {
      await eventually('the monitor to see the pause', async () =>
        router.monitor.states().every((state) => state.paused) ? true : undefined,
      );
      const result = await workload(ROUNDS);
      console.log(`[${target}] leases, replay paused: ${JSON.stringify(result)}`);
      expect(result.missed).toBe(0);
      expect(result.tokenDiscardedMissed).toBeGreaterThan(0);
      expect(result.replicaMissed).toBeGreaterThan(0);
    } finally {
      for (const name of replicas) await cluster.resumeReplay(name);
    }
  });

  it('replay delayed 300 ms: the read lease waits for a replica; the controls miss', async () => {
    await waitForReplicasToCatchUp(cluster);
    for (const name of replicas) {
      await cluster.exec(name, "ALTER SYSTEM SET recovery_min_apply_delay = '300ms'");
      await cluster.exec(name, 'SELECT pg_reload_conf()');
    }
    try {
      const result = await workload(ROUNDS);
      console.log(`[${target}] leases, replay delayed 300 ms: ${JSON.stringify(result)}`);
      expect(result.missed).toBe(0);
      expect(result.tokenDiscardedMissed).toBeGreaterThan(0);
      expect(result.replicaMissed).toBeGreaterThan(0);
      const waited = Object.entries(result.routes)
        .filter(([route]) => route.endsWith(':replica-waited'))
        .reduce((sum, [, count]) => sum + count, 0);
      expect(waited).toBeGreaterThan(0);
    } finally {
      for (const name of replicas) {
        await cluster.exec(name, 'ALTER SYSTEM RESET recovery_min_apply_delay');
        await cluster.exec(name, 'SELECT pg_reload_conf()');
      }
    }
  });

  it('release(error) rolls the write back; a connection used after release throws', async () => {
    await waitForReplicasToCatchUp(cluster);
    const session = new Session();
    const id = nextId++;
    const lease = await router.acquire(session, 'write');
    await insert(lease.connection, id);
    await lease.release(new Error('the app failed after the insert'));
    expect(session.clusters()).toEqual([]);
    const check = await router.acquire(new Session(), 'write');
    expect(await hasRow(check.connection, id)).toBe(false);
    await check.release();
    expect(() => check.connection.query('SELECT 1')).toThrow(LeaseError);
  });

  it('maxHoldMs revokes a write lease: its transaction is rolled back on the server', async () => {
    const session = new Session();
    const id = nextId++;
    const lease = await router.acquire(session, 'write', { maxHoldMs: 200 });
    await insert(lease.connection, id);
    await eventually('the lease to be revoked', async () =>
      lease.state === 'revoked' ? true : undefined,
    );
    await expect(lease.release()).rejects.toMatchObject({ code: 'TIDEMARK_LEASE_REVOKED' });
    // Checked on the primary: a rolled-back row is nowhere, a committed one is there first.
    const check = await router.acquire(new Session(), 'write');
    expect(await hasRow(check.connection, id)).toBe(false);
    await check.release();
    expect(router.metrics().leasesRevoked).toBe(1);
  });
});
