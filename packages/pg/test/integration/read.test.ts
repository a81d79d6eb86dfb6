import { PRIMARY } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgAdapter } from '../../src/index.js';
import { adapterFor, pgTargets, startPgCluster, waitForReplicasToCatchUp } from './support.js';

const targets = pgTargets();

describe.skipIf(targets.length === 0).each(targets)('%s: reads', (target) => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startPgCluster(target, 1);
    await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
    await waitForReplicasToCatchUp(cluster);
  }, 180_000);

  afterAll(async () => {
    await cluster?.teardown();
  });

  it('a connection error on a client just checked out is never an unhandled event (no crash)', async () => {
    const adapter = adapterFor(cluster);
    try {
      // The moment between pg-pool's checkout (it drops its idle listener) and the lease taking
      // over: what a server killed right then delivers must not crash the process.
      const pool = (adapter as unknown as { pools: { primary: { read: import('pg').Pool } } }).pools
        .primary.read;
      const client = await pool.connect();
      try {
        expect(() => client.emit('error', new Error('terminating connection'))).not.toThrow();
      } finally {
        client.release(true);
      }
    } finally {
      await adapter.close();
    }
  });

  it('runs on the replica and observes a position at least as new as the data read', async () => {
    const adapter = adapterFor(cluster);
    const replica = cluster.replicas()[0]!.name;
    try {
      const { position } = await adapter.write((c) => c.query('INSERT INTO items VALUES (1)'), {});
      await waitForReplicasToCatchUp(cluster);
      const before = adapter.roundTrips();
      const outcome = await adapter.read(
        replica,
        async (c) => (await c.query('SELECT count(*)::int AS n FROM items WHERE id = 1')).rows[0].n,
        {},
      );
      const after = adapter.roundTrips();
      expect(outcome.value).toBe(1);
      expect(outcome.observed).toBeDefined();
      expect(adapter.codec.compare(outcome.observed!, position)).toBe('covered');
      const trips = after.readRoundTrips - before.readRoundTrips;
      console.log(`[${target}] round trips per replica read with 1 SELECT: ${trips} (plain pg: 1)`);
      expect(after.reads - before.reads).toBe(1);
      expect(trips).toBe(2);
    } finally {
      await adapter.close();
    }
  });

  it('asked to observe explicitly, a replica read sends the position behind its statements: 1 round trip, covered; a portal query falls back', async () => {
    const adapter = adapterFor(cluster);
    const replica = cluster.replicas()[0]!.name;
    try {
      const { position } = await adapter.write((c) => c.query('INSERT INTO items VALUES (3)'), {});
      await waitForReplicasToCatchUp(cluster);
      const count = 'SELECT count(*)::int AS n FROM items WHERE id = 3';
      const before = adapter.roundTrips();
      const outcome = await adapter.read(replica, async (c) => (await c.query(count)).rows[0].n, {
        observe: true,
      });
      const after = adapter.roundTrips();
      expect(outcome.value).toBe(1);
      expect(adapter.codec.compare(outcome.observed!, position)).toBe('covered');
      expect(after.readRoundTrips - before.readRoundTrips).toBe(1);
      // A query that keeps a portal open is never pipelined: the position is read after it.
      const portal = await adapter.read(
        replica,
        async (c) => {
          const query = { text: 'SELECT id FROM items', rows: 10 } as unknown as string;
          return (await c.query(query)).rows.length;
        },
        { observe: true },
      );
      expect(portal.value).toBeGreaterThan(0);
      expect(adapter.codec.compare(portal.observed!, position)).toBe('covered');
      // A failing statement: the error reaches the caller, the connection stays usable.
      await expect(
        adapter.read(replica, (c) => c.query('SELECT * FROM no_such_table'), { observe: true }),
      ).rejects.toThrow(/no_such_table/);
      const again = await adapter.read(replica, async (c) => (await c.query(count)).rows[0].n, {
        observe: true,
      });
      expect(again.value).toBe(1);
    } finally {
      await adapter.close();
    }
  });

  it('observes the primary position on a primary read, after the read', async () => {
    const adapter = adapterFor(cluster);
    try {
      const { position } = await adapter.write((c) => c.query('INSERT INTO items VALUES (2)'), {});
      const before = adapter.roundTrips();
      const outcome = await adapter.read(PRIMARY, (c) => c.query('SELECT 1'), {});
      expect(adapter.roundTrips().readRoundTrips - before.readRoundTrips).toBe(2);
      expect(adapter.codec.compare(outcome.observed!, position)).toBe('covered');
    } finally {
      await adapter.close();
    }
  });

  it("keeps a URL's own options parameter and still adds read-only", async () => {
    const url = new URL(cluster.primary().url);
    url.searchParams.set('options', '-c statement_timeout=4321');
    const adapter = createPgAdapter({ primary: url.toString(), replicas: {} });
    try {
      const { value } = await adapter.read(
        PRIMARY,
        async (c) =>
          (
            await c.query(
              "SELECT current_setting('statement_timeout') AS timeout, current_setting('transaction_read_only') AS ro",
            )
          ).rows[0],
        {},
      );
      expect(value).toEqual({ timeout: '4321ms', ro: 'on' });
    } finally {
      await adapter.close();
    }
  });

  it('does not hand a connection with an open transaction to the next read', async () => {
    const adapter = adapterFor(cluster, { poolSize: 1 });
    const replica = cluster.replicas()[0]!.name;
    try {
      await adapter.read(replica, (c) => c.query('BEGIN'), {});
      const { value } = await adapter.read(
        replica,
        async (c) => (await c.query('SELECT now() = statement_timestamp() AS fresh')).rows[0].fresh,
        {},
      );
      expect(value).toBe(true);
    } finally {
      await adapter.close();
    }
  });
});
