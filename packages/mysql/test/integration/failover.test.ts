import { ErrorCode, Router, Session } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import type { PoolConnection } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMysqlAdapter, GtidSet, MariadbGtidPosition } from '../../src/index.js';
import {
  adapterFor,
  eventually,
  flavourOf,
  type LooseAdapter,
  mysqlTargets,
  noSignal,
  startMysqlCluster,
  waitForReplicasToCatchUp,
} from './support.js';

const targets = mysqlTargets();

/**
 * Promotion of a replica that lacks an acknowledged write: both replicas are stopped, the primary
 * commits one more row (L), the primary goes away and a replica is promoted. L's token names a
 * transaction the new primary never executed and never will.
 */
describe.skipIf(targets.length === 0).each(targets)('%s: failover', (target) => {
  const mysqlFlavour = flavourOf(target) === 'mysql';
  let cluster: Cluster;
  let n1: string;
  let n2: string;
  // biome-ignore lint/suspicious/noExplicitAny: positions of either flavour.
  let kept: any;
  // biome-ignore lint/suspicious/noExplicitAny: positions of either flavour.
  let lost: any;
  let adapter: LooseAdapter;

  const ids = async (c: PoolConnection) => {
    const [result] = (await c.query('SELECT id FROM items ORDER BY id')) as unknown as [
      Array<{ id: number }>,
    ];
    return result.map((row) => row.id);
  };

  beforeAll(async () => {
    cluster = await startMysqlCluster(target, 2);
    [n1, n2] = cluster.replicas().map((node) => node.name) as [string, string];
    await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
    const old = adapterFor(cluster, target);
    try {
      kept = (await old.write((c) => c.query('INSERT INTO items VALUES (1)'), {})).position;
      await waitForReplicasToCatchUp(cluster, old);
      await cluster.stop(n2);
      await cluster.stop(n1);
      lost = (await old.write((c) => c.query('INSERT INTO items VALUES (2)'), {})).position;
    } finally {
      await old.close();
    }
    await cluster.stop(cluster.primary().name);
    await cluster.start(n1);
    await cluster.promote(n1);
    await cluster.start(n2);
    adapter = newAdapter();
  }, 240_000);

  /** The application reconfigured after the failover: n1 is the primary, n2 its replica. */
  function newAdapter(): LooseAdapter {
    return createMysqlAdapter({
      flavour: flavourOf(target),
      primary: cluster.primary().url,
      replicas: { [n2]: cluster.replicas().find((node) => node.name === n2)!.url },
      poolSize: 4,
    });
  }

  afterAll(async () => {
    await adapter?.close();
    await cluster?.teardown();
  });

  it('classifies the lost write as other-history, the kept one as ok, a forged one as impossible', async () => {
    expect(cluster.primary().name).toBe(n1);
    const primary = await adapter.probePrimary({ signal: noSignal() });
    expect(adapter.codec.compare(primary, kept)).toBe('covered');
    expect(adapter.codec.compare(primary, lost)).not.toBe('covered');
    expect(adapter.classifyAgainstPrimary(primary, kept)).toBe('ok');
    expect(adapter.classifyAgainstPrimary(primary, lost)).toBe('other-history');
    expect(adapter.classifyAgainstPrimary(primary, await forgedByPrimary())).toBe('impossible');
  });

  /** A position of the new primary's own transactions that it has not written. */
  async function forgedByPrimary() {
    if (mysqlFlavour) {
      const [row] = (await cluster.exec(n1, 'SELECT @@global.server_uuid AS uuid')) as Array<{
        uuid: string;
      }>;
      return GtidSet.parse(`${row!.uuid}:1-1000000`);
    }
    const [row] = (await cluster.exec(n1, 'SELECT @@global.server_id AS id')) as Array<{
      id: number;
    }>;
    return MariadbGtidPosition.parse(`0-${row!.id}-1000000`);
  }

  it('routes a session from before the failover to the new replica', async () => {
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
        const read = await router.readDetailed(session, ids);
        return read.decision.target === n2 ? read : undefined;
      });
      expect(routed.value).toEqual([1]);
    } finally {
      await router.close();
    }
  });

  it('surfaces the lost write as other-history and never waits on it; reads the primary under that policy', async () => {
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
      await expect(strict.read(session, ids)).rejects.toMatchObject({
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
      const read = await lenient.readDetailed(session, ids);
      expect(read.decision.reason).toBe('primary-other-history');
      expect(read.value).toEqual([1]); // the lost row is really gone
    } finally {
      await lenient.close();
    }
  });

  it('rejects a forged position of the new primary as impossible', async () => {
    const router = new Router({
      adapter: newAdapter(),
      cluster: 'main',
      monitorOptions: { intervalMs: 50 },
    });
    try {
      await router.ready();
      const session = new Session();
      session.raise('main', adapter.codec, await forgedByPrimary());
      await expect(router.read(session, ids)).rejects.toMatchObject({
        code: ErrorCode.TokenImpossible,
      });
      expect(router.metrics().badTokens).toBe(1);
    } finally {
      await router.close();
    }
  });

  it('keeps seeing the lost write after the new primary writes past it (GTID sets keep every transaction; MariaDB reads the binary log state)', async () => {
    for (let id = 10; id < 13; id++) {
      await adapter.write((c) => c.query('INSERT INTO items VALUES (?)', [id]), {});
    }
    const primary = await adapter.probePrimary({ signal: noSignal() });
    if (!mysqlFlavour) {
      // The one-GTID-per-domain position alone now "covers" the lost write...
      expect(adapter.codec.compare(primary, lost)).toBe('covered');
    }
    // ...but the verdict does not: the new primary never logged it from the old primary.
    expect(adapter.classifyAgainstPrimary(primary, lost)).toBe('other-history');
    expect(adapter.classifyAgainstPrimary(primary, kept)).toBe('ok');
  });
});
