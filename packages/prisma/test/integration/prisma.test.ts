/**
 * Prisma through Tidemark on a real cluster (a PostgreSQL 15 primary and two replicas started by
 * the test harness; TIDEMARK_TARGETS picks pg18 or pg19 instead). The control is Prisma's own
 * `@prisma/extension-read-replicas` over plain `@prisma/adapter-pg` clients of the same nodes,
 * which must miss. Tables are created with SQL: `prisma migrate` needs the schema engine.
 */

import { PrismaPg } from '@prisma/adapter-pg';
import { readReplicas as prismaReadReplicas } from '@prisma/extension-read-replicas';
import { type RouteDecision, Router, runWithSession, Session } from '@tidemark/core';
import { createPgAdapter } from '@tidemark/pg';
import { type Cluster, startCluster, waitForTable } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrismaErrorCode, PrismaTidemark, readReplicas } from '../../src/index.js';
import { PrismaClient } from '../generated/client.js';

const requested = (process.env['TIDEMARK_TARGETS'] ?? 'pg15')
  .split(',')
  .map((t) => t.trim())
  .filter((t) => ['pg15', 'pg18', 'pg19'].includes(t));
if (requested.length === 0) {
  console.warn(
    `\n*** @tidemark/prisma integration tests SKIPPED: TIDEMARK_TARGETS=${JSON.stringify(process.env['TIDEMARK_TARGETS'])} names no PostgreSQL target. ***\n`,
  );
}

const plainClient = (url: string) =>
  new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 4 }) });
const tidemarkClient = (router: Router<unknown, unknown>) =>
  new PrismaClient({ adapter: PrismaTidemark(router as never) }).$extends(
    readReplicas({ router: router as never }),
  );

describe.skipIf(requested.length === 0).each(requested)('%s: Prisma through Tidemark', (target) => {
  let cluster: Cluster;
  let router: Router<unknown, unknown>;
  let db: ReturnType<typeof tidemarkClient>;
  let bare: PrismaClient;
  let control: ReturnType<typeof controlClient>;
  let controlBase: PrismaClient;
  let controlReplicas: PrismaClient[];
  const decisions: RouteDecision[] = [];
  let customer = 0;

  function controlClient() {
    controlBase = plainClient(cluster.primary().url);
    controlReplicas = cluster.replicas().map((n) => plainClient(n.url));
    return controlBase.$extends(prismaReadReplicas({ replicas: controlReplicas as never }));
  }

  beforeAll(async () => {
    cluster = await startCluster(target, { replicas: 2 });
    const replicas = Object.fromEntries(cluster.replicas().map((n) => [n.name, n.url]));
    router = new Router({
      adapter: createPgAdapter({ primary: cluster.primary().url, replicas, poolSize: 4 }) as never,
      cluster: 'main',
      selection: 'round-robin',
    });
    router.events.on('decision', (d) => decisions.push(d));
    await router.ready();
    db = tidemarkClient(router);
    bare = new PrismaClient({ adapter: PrismaTidemark(router as never) });
    control = controlClient();
    await cluster.exec(
      cluster.primary().name,
      'create table orders (id serial primary key, customer int not null, note varchar(100) not null)',
    );
    await cluster.exec(
      cluster.primary().name,
      'create table items (id serial primary key, order_id int not null references orders (id), name text not null)',
    );
    await waitForTable(cluster, 'orders');
    await waitForTable(cluster, 'items');
  }, 240_000);

  afterAll(async () => {
    await db?.$disconnect();
    await bare?.$disconnect();
    await controlBase?.$disconnect();
    for (const c of controlReplicas ?? []) await c.$disconnect();
    await router?.close();
    await cluster?.teardown();
  });

  /** With replay paused on every replica, then resumed (and the monitor told). */
  async function paused<T>(fn: () => Promise<T>): Promise<T> {
    for (const n of cluster.replicas()) await cluster.pauseReplay(n.name);
    try {
      return await fn();
    } finally {
      for (const n of cluster.replicas()) await cluster.resumeReplay(n.name);
      await router.monitor.refresh();
    }
  }

  it('create then findMany of own orders, replay paused: Tidemark 0 missed, extension-read-replicas misses', async () => {
    const { tidemarkMissed, controlMissed, reads } = await paused(async () => {
      let tidemarkMissed = 0;
      let controlMissed = 0;
      let reads = 0;
      for (let i = 0; i < 20; i++) {
        const me = ++customer;
        const session = new Session();
        const mine = await runWithSession(session, async () => {
          const created = await db.order.create({ data: { customer: me, note: `order ${i}` } });
          const many = await db.order.findMany({ where: { customer: me } });
          const one = await db.order.findUnique({ where: { id: created.id } });
          const count = await db.order.count({ where: { customer: me } });
          return [many.length === 1, one !== null, count === 1];
        });
        reads += mine.length;
        tidemarkMissed += mine.filter((ok) => !ok).length;
        const other = ++customer;
        const created = await control.order.create({ data: { customer: other, note: 'control' } });
        const seen = [
          (await control.order.findMany({ where: { customer: other } })).length === 1,
          (await control.order.findUnique({ where: { id: created.id } })) !== null,
          (await control.order.count({ where: { customer: other } })) === 1,
        ];
        controlMissed += seen.filter((ok) => !ok).length;
      }
      return { tidemarkMissed, controlMissed, reads };
    });
    console.log(
      `[${target}] prisma, replay paused on both replicas: Tidemark missed ${tidemarkMissed}/${reads}, @prisma/extension-read-replicas missed ${controlMissed}/${reads}`,
    );
    expect(tidemarkMissed).toBe(0);
    expect(controlMissed).toBe(reads);
  });

  it('model reads go to replicas; writes, raw queries and $primary() to the primary; $replica() refuses writes', async () => {
    const session = new Session();
    const me = ++customer;
    await runWithSession(session, async () => {
      await db.order.create({ data: { customer: me, note: 'a' } });
      // Until both replicas have it, so the reads below can be served there.
      await router.monitor.refresh();
      for (let i = 0; i < 100; i++) {
        const have = await Promise.all(
          cluster
            .replicas()
            .map((n) =>
              cluster.exec(n.name, `select count(*) as n from orders where customer = ${me}`),
            ),
        );
        if (have.every((rows) => Number((rows[0] as { n: string }).n) === 1)) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      await router.monitor.refresh();

      const before = decisions.length;
      expect(await db.order.findMany({ where: { customer: me } })).toHaveLength(1);
      expect(await db.order.findFirst({ where: { customer: me } })).not.toBeNull();
      expect(await db.order.count({ where: { customer: me } })).toBe(1);
      const routed = decisions.slice(before);
      expect(routed).toHaveLength(3);
      expect(routed.every((d) => d.target !== 'primary')).toBe(true);

      const none = decisions.length;
      await db.order.update({
        where: { id: (await db.$primary().order.findFirstOrThrow({ where: { customer: me } })).id },
        data: { note: 'b' },
      });
      const raw = await db.$queryRaw<
        Array<{ in_recovery: boolean }>
      >`select pg_is_in_recovery() as in_recovery`;
      expect(raw[0]?.in_recovery).toBe(false);
      expect(decisions.length).toBe(none);

      const replicaRaw = await db.$replica().$queryRaw<
        Array<{ in_recovery: boolean }>
      >`select pg_is_in_recovery() as in_recovery`;
      expect(decisions.length).toBe(none + 1);
      expect(typeof replicaRaw[0]?.in_recovery).toBe('boolean');
      await expect(
        db.$replica().order.create({ data: { customer: me, note: 'c' } }),
      ).rejects.toThrow(/read-only/i);
      // A nested create runs in a transaction Prisma opens: refused, not run on the primary.
      await expect(
        db.$replica().order.create({
          data: { customer: me, note: 'd', items: { create: [{ name: 'x' }] } },
        }),
      ).rejects.toMatchObject({ code: PrismaErrorCode.ReplicaInTransaction });
      expect(await db.$primary().order.count({ where: { customer: me } })).toBe(1);
    });
  });

  it('findUnique calls of two sessions in one tick each see their own write (no cross-session batch)', async () => {
    const result = await paused(async () => {
      const sessions = [new Session(), new Session()];
      const writer = ++customer;
      const [, mine] = sessions as [Session, Session];
      // Only the second session writes; the first reads an id that does not exist.
      const created = await runWithSession(mine, () =>
        db.order.create({ data: { customer: writer, note: 'batched' } }),
      );
      const tidemark = await Promise.all([
        runWithSession(sessions[0]!, () => db.order.findUnique({ where: { id: -1 } })),
        runWithSession(mine, () => db.order.findUnique({ where: { id: created.id } })),
      ]);
      // The bare adapter keeps Prisma's batching: one query, routed with the first session.
      const batched = await Promise.all([
        runWithSession(new Session(), () => bare.order.findUnique({ where: { id: -1 } })),
        runWithSession(mine, () => bare.order.findUnique({ where: { id: created.id } })),
      ]);
      return { tidemark, batched };
    });
    console.log(
      `[${target}] prisma, two sessions' findUnique in one tick: extension found own row ${result.tidemark[1] !== null}, bare adapter (Prisma's batch) found it ${result.batched[1] !== null}`,
    );
    expect(result.tidemark[1]).not.toBeNull();
    // The hazard the extension avoids is real: the batch was read with the other session.
    expect(result.batched[1]).toBeNull();
  });

  it('fluent relation calls (findUnique(...).items()) return the relation, routed like findUnique', async () => {
    const session = new Session();
    const me = ++customer;
    await paused(() =>
      runWithSession(session, async () => {
        const order = await db.order.create({
          data: { customer: me, note: 'fluent', items: { create: [{ name: 'a' }, { name: 'b' }] } },
        });
        const before = decisions.length;
        const items = await db.order.findUnique({ where: { id: order.id } }).items();
        expect(items?.map((i) => i.name).sort()).toEqual(['a', 'b']);
        const orThrow = await db.order.findUniqueOrThrow({ where: { id: order.id } }).items();
        expect(orThrow).toHaveLength(2);
        expect(await db.order.findUnique({ where: { id: -1 } }).items()).toBeNull();
        // Routed reads (Prisma may load the relation with a second statement).
        expect(decisions.length).toBeGreaterThanOrEqual(before + 3);
      }),
    );
  });

  it('interactive and batch transactions run on the primary and their commits are visible to the next read', async () => {
    const { missed, total } = await paused(async () => {
      let missed = 0;
      let total = 0;
      for (let i = 0; i < 5; i++) {
        const session = new Session();
        const me = ++customer;
        await runWithSession(session, async () => {
          const inside = await db.$transaction(async (tx) => {
            await tx.order.create({ data: { customer: me, note: 'itx' } });
            return tx.order.count({ where: { customer: me } });
          });
          expect(inside).toBe(1);
          await db.$transaction([
            db.order.create({ data: { customer: me, note: 'batch 1' } }),
            db.order.create({ data: { customer: me, note: 'batch 2' } }),
          ]);
          total++;
          if ((await db.order.findMany({ where: { customer: me } })).length !== 3) missed++;
        });
      }
      return { missed, total };
    });
    expect(missed).toBe(0);
    expect(total).toBe(5);
    const session = new Session();
    await runWithSession(session, async () => {
      await expect(
        db.$transaction(async (tx) => {
          await tx.order.create({ data: { customer: -5, note: 'rolled back' } });
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await db.$primary().order.count({ where: { customer: -5 } })).toBe(0);
      await expect(
        db.$transaction(async (tx) => (tx as unknown as typeof db).$replica()),
      ).rejects.toMatchObject({
        code: PrismaErrorCode.ReplicaInTransaction,
      });
    });
  });
});
