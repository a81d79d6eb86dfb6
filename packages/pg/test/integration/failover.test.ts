import { ErrorCode, Router, Session } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgAdapter, type PgAdapter, type PgPosition } from '../../src/index.js';
import {
  adapterFor,
  eventually,
  majorOf,
  noSignal,
  pgTargets,
  startPgCluster,
  waitForReplicasToCatchUp,
  withConnection,
} from './support.js';

const targets = pgTargets();

/**
 * Promotion with a lost write: both replicas are cut off from the primary, the primary commits
 * one more row, then a replica is promoted. The token of that row belongs to the old timeline past
 * the switch point: another history.
 */
describe.skipIf(targets.length === 0).each(targets)('%s: failover', (target) => {
  let cluster: Cluster;
  let n1: string;
  let n2: string;
  let kept: PgPosition;
  let lost: PgPosition;
  let adapter: PgAdapter;

  beforeAll(async () => {
    cluster = await startPgCluster(target, 2);
    [n1, n2] = cluster.replicas().map((node) => node.name) as [string, string];
    await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
    const old = adapterFor(cluster);
    try {
      kept = (await old.write((c) => c.query('INSERT INTO items VALUES (1)'), {})).position;
      await waitForReplicasToCatchUp(cluster);
      // n2 first, so it can never be ahead of n1 and can follow n1's new timeline.
      for (const name of [n2, n1]) {
        await cluster.exec(name, "ALTER SYSTEM SET primary_conninfo = ''");
        await cluster.exec(name, 'SELECT pg_reload_conf()');
        await eventually(`${name} to stop receiving`, async () => {
          const rows = await cluster.exec(name, 'SELECT 1 FROM pg_stat_wal_receiver');
          return rows.length === 0 ? true : undefined;
        });
      }
      // While the receiver is down the timeline comes from the fallback, still 1.
      const disconnected = await old.probe(n1, { signal: noSignal(), primary: undefined });
      expect(disconnected.applied.timeline).toBe(1);
      // An observation (no control-file read) labels it with the last timeline seen: also 1.
      const observed = await old.observe(n1, { signal: noSignal() });
      expect(observed.timeline).toBe(1);
      expect(old.codec.compare(observed, disconnected.applied)).toBe('covered');
      lost = (await old.write((c) => c.query('INSERT INTO items VALUES (2)'), {})).position;
      for (const name of [n1, n2]) {
        // Takes effect at the reload the harness sends when it re-points the replica.
        await cluster.exec(name, 'ALTER SYSTEM RESET primary_conninfo');
      }
    } finally {
      await old.close();
    }
    await cluster.promote(n1);
    adapter = newAdapter();
  }, 240_000);

  /** The application reconfigured after the failover: n1 is the primary, n2 its replica. */
  function newAdapter(): PgAdapter {
    return createPgAdapter({
      primary: cluster.primary().url,
      replicas: { [n2]: cluster.replicas().find((node) => node.name === n2)!.url },
      poolSize: 4,
    });
  }

  afterAll(async () => {
    await adapter?.close();
    await cluster?.teardown();
  });

  it('sees the new timeline at once and learns its switch point from the history file', async () => {
    expect(cluster.primary().name).toBe(n1);
    const primary = await adapter.probePrimary({ signal: noSignal() });
    expect(primary.timeline).toBe(2);
    const switchpoint = adapter.history.get(2);
    expect(switchpoint?.parent).toBe(1);
    expect(kept.lsn).toBeLessThanOrEqual(switchpoint!.switchpoint);
    expect(lost.lsn).toBeGreaterThan(switchpoint!.switchpoint);
    expect(adapter.codec.compare(primary, kept)).toBe('covered');
    expect(adapter.codec.compare(primary, lost)).toBe('other-history');
  });

  it('routes a session from before the failover to the replica on the new timeline', async () => {
    const router = new Router({
      adapter: newAdapter(),
      cluster: 'main',
      monitorOptions: { intervalMs: 50 },
    });
    try {
      await router.ready();
      const session = new Session();
      session.raise('main', adapter.codec, kept);
      const routed = await eventually('a replica read', async () => {
        const read = await router.readDetailed(session, async (c) =>
          (await c.query('SELECT id FROM items ORDER BY id')).rows.map((row) => row.id as number),
        );
        return read.decision.target === n2 ? read : undefined;
      });
      expect(routed.value).toEqual([1]);
      // Once settled, the session holds a position on the new timeline.
      await session.settled();
      expect(session.position('main', adapter.codec)?.timeline).toBe(2);
      // n2 follows the new timeline, and an observation says so (from the WAL receiver).
      const observed = await adapter.observe(n2, { signal: noSignal() });
      expect(observed.timeline).toBe(2);
      expect(adapter.codec.compare(observed, kept)).toBe('covered');
      expect(adapter.codec.compare(observed, lost)).toBe('other-history');
    } finally {
      await router.close();
    }
  });

  it('surfaces a lost write as other-history and never waits on it', async () => {
    const strict = new Router({
      adapter: newAdapter(),
      cluster: 'main',
      monitorOptions: { intervalMs: 50 },
    });
    let waits = 0;
    strict.events.on('wait', () => {
      waits++;
    });
    const session = new Session();
    session.raise('main', adapter.codec, lost);
    try {
      await strict.ready();
      await expect(strict.read(session, (c) => c.query('SELECT 1'))).rejects.toMatchObject({
        code: ErrorCode.OtherHistory,
      });
      expect(waits).toBe(0);
      expect(strict.metrics().otherHistory).toBe(1);
    } finally {
      await strict.close();
    }
    const lenient = new Router({
      adapter: newAdapter(),
      cluster: 'main',
      otherHistory: 'primary',
      monitorOptions: { intervalMs: 50 },
    });
    try {
      await lenient.ready();
      const read = await lenient.readDetailed(session, async (c) =>
        (await c.query('SELECT id FROM items ORDER BY id')).rows.map((row) => row.id as number),
      );
      expect(read.decision.reason).toBe('primary-other-history');
      // The lost row is really gone.
      expect(read.value).toEqual([1]);
    } finally {
      await lenient.close();
    }
  });

  if (majorOf(target) >= 19) {
    it('does not accept WAIT FOR LSN success for a position of the lost history', async () => {
      // Let the new timeline move past the lost write's LSN, so WAIT FOR LSN (which compares LSNs
      // only) reports success on the replica.
      let id = 10;
      await eventually('the new timeline to pass the lost LSN', async () => {
        const { position } = await adapter.write(
          (c) =>
            c.query('INSERT INTO items SELECT g FROM generate_series($1::int, $1::int + 99) g', [
              id,
            ]),
          {},
        );
        id += 100;
        return position.lsn > lost.lsn ? true : undefined;
      });
      await waitForReplicasToCatchUp(cluster);
      await adapter.probe(n2, { signal: noSignal(), primary: undefined });
      const status = await withConnection(
        cluster.replicas().find((node) => node.name === n2)!.url,
        async (client) => {
          const lsn = `${(lost.lsn >> 32n).toString(16)}/${(lost.lsn & 0xffffffffn).toString(16)}`;
          const { rows } = await client.query(
            `WAIT FOR LSN '${lsn}' WITH (TIMEOUT '100ms', NO_THROW)`,
          );
          return rows[0].status as string;
        },
      );
      expect(status).toBe('success');
      const outcome = await adapter.waitFor!(n2, lost, 300, { signal: noSignal() });
      expect(outcome.outcome).toBe('other-history');
    });
  }
});
