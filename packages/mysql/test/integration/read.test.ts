import { PRIMARY } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adapterFor,
  eventually,
  flavourOf,
  type LooseAdapter,
  mysqlTargets,
  startMysqlCluster,
  waitForReplicasToCatchUp,
} from './support.js';

const targets = mysqlTargets();

describe.skipIf(targets.length === 0).each(targets)('%s: reads', (target) => {
  let cluster: Cluster;
  let setup: LooseAdapter;

  beforeAll(async () => {
    cluster = await startMysqlCluster(target, 1);
    await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
    setup = adapterFor(cluster, target);
    await waitForReplicasToCatchUp(cluster, setup);
  }, 180_000);

  afterAll(async () => {
    await setup?.close();
    await cluster?.teardown();
  });

  const count = async (c: import('mysql2/promise').PoolConnection, id: number) => {
    const [result] = (await c.query('SELECT COUNT(*) AS n FROM items WHERE id = ?', [
      id,
    ])) as unknown as [Array<{ n: number }>];
    return Number(result[0]?.n);
  };

  it('runs on the replica and observes a position at least as new as the data read (2 round trips)', async () => {
    const adapter = adapterFor(cluster, target);
    const replica = cluster.replicas()[0]!.name;
    try {
      const { position } = await adapter.write((c) => c.query('INSERT INTO items VALUES (1)'), {});
      await waitForReplicasToCatchUp(cluster, adapter);
      const before = adapter.roundTrips();
      const outcome = await adapter.read(replica, (c) => count(c, 1), {});
      const after = adapter.roundTrips();
      expect(outcome.value).toBe(1);
      expect(outcome.observed).toBeDefined();
      expect(adapter.codec.compare(outcome.observed, position)).toBe('covered');
      const trips = after.readRoundTrips - before.readRoundTrips;
      console.log(
        `[${target}] round trips per replica read with 1 SELECT: ${trips} (plain mysql2: 1); read-only session setup: ${after.sessionSetups - before.sessionSetups} round trip once per new connection`,
      );
      expect(after.reads - before.reads).toBe(1);
      expect(trips).toBe(2);
      // The read-only mode is set once per connection, not per read.
      await adapter.read(replica, (c) => count(c, 1), {});
      expect(adapter.roundTrips().sessionSetups).toBe(after.sessionSetups);
      expect(adapter.roundTrips().readRoundTrips - after.readRoundTrips).toBe(2);
    } finally {
      await adapter.close();
    }
  });

  it('observes the primary position on a primary read, after the read', async () => {
    const adapter = adapterFor(cluster, target);
    try {
      const { position } = await adapter.write((c) => c.query('INSERT INTO items VALUES (2)'), {});
      const before = adapter.roundTrips();
      const outcome = await adapter.read(PRIMARY, (c) => c.query('SELECT 1'), {});
      expect(adapter.roundTrips().readRoundTrips - before.readRoundTrips).toBe(2);
      expect(adapter.codec.compare(outcome.observed, position)).toBe('covered');
    } finally {
      await adapter.close();
    }
  });

  // Refusals of writes inside reads (errno 1792/1290, not retried, explicit transactions too)
  // are part of the adapter contract in @tidemark/conformance; what is MySQL's own is the
  // session flag that makes them read-only even where super_read_only would refuse first.
  it.each([
    ['the replica', 'replica'],
    ['the primary fallback', 'primary'],
  ])('runs reads on READ ONLY sessions on %s', async (_name, where) => {
    const adapter = adapterFor(cluster, target);
    const readTarget = where === 'primary' ? PRIMARY : cluster.replicas()[0]!.name;
    try {
      const { value: readOnly } = await adapter.read(
        readTarget,
        async (c) => {
          const [result] = (await c.query(
            `SELECT ${flavourOf(target) === 'mysql' ? '@@session.transaction_read_only' : '@@session.tx_read_only'} AS ro`,
          )) as unknown as [Array<{ ro: number }>];
          return Number(result[0]?.ro);
        },
        {},
      );
      expect(readOnly).toBe(1);
    } finally {
      await adapter.close();
    }
  });

  it('does not hand a connection with an open transaction to the next read', async () => {
    const adapter = adapterFor(cluster, target, { poolSize: 1 });
    const replica = cluster.replicas()[0]!.name;
    try {
      // A snapshot left open: a connection reused with it would not see later rows.
      await adapter.read(
        replica,
        async (c) => {
          await c.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
          await count(c, 5);
        },
        {},
      );
      await adapter.write((c) => c.query('INSERT INTO items VALUES (5)'), {});
      await waitForReplicasToCatchUp(cluster, adapter);
      const { value } = await adapter.read(replica, (c) => count(c, 5), {});
      expect(value).toBe(1);
      expect(adapter.roundTrips().sessionSetups).toBe(3); // write, first read, fresh read
    } finally {
      await adapter.close();
    }
  });

  it('stops a running read when its signal aborts, by destroying the connection', async () => {
    const adapter = adapterFor(cluster, target, { poolSize: 1 });
    const replica = cluster.replicas()[0]!.name;
    try {
      const controller = new AbortController();
      const reason = new Error('caller gave up');
      setTimeout(() => controller.abort(reason), 100);
      const started = Date.now();
      await expect(
        adapter.read(replica, (c) => c.query('SELECT SLEEP(5)'), { signal: controller.signal }),
      ).rejects.toBe(reason);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(adapter.isRetryable!(reason)).toBe(false);
      // The statement was stopped on the server too (KILL QUERY), well before its 5 s.
      await eventually(
        'the aborted SLEEP to end on the server',
        async () => {
          const running = await cluster.exec(
            replica,
            "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(5)'",
          );
          return running.length === 0 ? true : undefined;
        },
        1500,
      );
      // The only pooled connection was replaced: the next read works.
      const { value } = await adapter.read(replica, async () => 'ok', {});
      expect(value).toBe('ok');
    } finally {
      await adapter.close();
    }
  });
});
