/**
 * Prisma on MySQL and MariaDB through Tidemark (`@tidemark/prisma/mariadb`) on real clusters: a
 * MySQL 9.7 and a MariaDB 10.11 primary with two replicas each, started by the test harness
 * (TIDEMARK_TARGETS picks). The control is Prisma's own `@prisma/extension-read-replicas` over
 * plain `@prisma/adapter-mariadb` clients of the same nodes, which must miss; the results of every
 * column type are compared with that adapter's own on the primary. Tables are created with SQL:
 * `prisma migrate` needs the schema engine.
 */

import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { readReplicas as prismaReadReplicas } from '@prisma/extension-read-replicas';
import { loadTarget } from '@tidemark/conformance';
import { type RouteDecision, Router, runWithSession, Session } from '@tidemark/core';
import type { Adapter } from '@tidemark/core/adapter';
import { type Cluster, waitForTable } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrismaErrorCode, PrismaTidemark, readReplicas } from '../../src/mariadb-entry.js';
import { PrismaClient } from '../generated-mysql/client.js';

const KNOWN = ['mysql97', 'mariadb1011'];
const requested = (process.env['TIDEMARK_TARGETS'] ?? 'mysql97,mariadb1011')
  .split(',')
  .map((t) => t.trim())
  .filter((t) => KNOWN.includes(t));
if (requested.length === 0) {
  console.warn(
    `\n*** @tidemark/prisma MySQL/MariaDB integration tests SKIPPED: TIDEMARK_TARGETS=${JSON.stringify(process.env['TIDEMARK_TARGETS'])} names no mysql97 or mariadb1011 target. ***\n`,
  );
}

const plainClient = (url: string) =>
  new PrismaClient({ adapter: new PrismaMariaDb(url.replace(/^mysql:/, 'mariadb:')) });
const tidemarkClient = (router: Router<unknown, unknown>) =>
  new PrismaClient({ adapter: PrismaTidemark(router as never) }).$extends(
    readReplicas({ router: router as never }),
  );

const CREATE_SAMPLES = `create table samples (
  id int auto_increment primary key,
  big bigint not null,
  small smallint not null,
  \`unsigned\` int unsigned not null,
  flag tinyint(1) not null,
  ratio double not null,
  price decimal(12, 4) not null,
  at datetime(3) not null,
  stamp timestamp(6) not null,
  day date not null,
  clock time(3) not null,
  data json null,
  bytes blob not null,
  text text not null,
  tag enum('small', 'large') not null,
  year year not null) character set utf8mb4`;

describe.skipIf(requested.length === 0).each(requested)(
  '%s: Prisma through Tidemark (@tidemark/prisma/mariadb)',
  (target) => {
    let cluster: Cluster;
    let router: Router<unknown, unknown>;
    let db: ReturnType<typeof tidemarkClient>;
    let primary: PrismaClient;
    let controlBase: PrismaClient;
    let controlReplicas: PrismaClient[];
    let control: ReturnType<typeof controlClient>;
    const decisions: RouteDecision[] = [];
    let customer = 0;

    function controlClient() {
      controlBase = plainClient(cluster.primary().url);
      controlReplicas = cluster.replicas().map((n) => plainClient(n.url));
      return controlBase.$extends(prismaReadReplicas({ replicas: controlReplicas as never }));
    }

    beforeAll(async () => {
      const conformance = await loadTarget(target);
      cluster = await conformance.startCluster();
      router = new Router({
        adapter: conformance.createAdapter(cluster) as Adapter<unknown, unknown>,
        cluster: 'main',
        selection: 'round-robin',
      });
      router.events.on('decision', (d) => decisions.push(d));
      await router.ready();
      db = tidemarkClient(router);
      primary = plainClient(cluster.primary().url);
      control = controlClient();
      const node = cluster.primary().name;
      await cluster.exec(
        node,
        'create table orders (id int auto_increment primary key, customer int not null, note varchar(100) not null)',
      );
      await cluster.exec(
        node,
        'create table items (id int auto_increment primary key, order_id int not null, name text not null, foreign key (order_id) references orders (id))',
      );
      await cluster.exec(node, CREATE_SAMPLES);
      for (const table of ['orders', 'items', 'samples']) await waitForTable(cluster, table);
    }, 240_000);

    afterAll(async () => {
      await db?.$disconnect();
      await primary?.$disconnect();
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

    /** Until both replicas have every row the primary has of `orders`, then tell the monitor. */
    async function caughtUp(): Promise<void> {
      const count = async (node: string) =>
        Number(
          ((await cluster.exec(node, 'select count(*) as n from orders'))[0] as { n: number }).n,
        );
      const want = await count(cluster.primary().name);
      for (let i = 0; i < 400; i++) {
        const have = await Promise.all(cluster.replicas().map((n) => count(n.name)));
        if (have.every((n) => n >= want)) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      await router.monitor.refresh();
    }

    it('create then findMany of own orders, replay paused: Tidemark 0 missed, extension-read-replicas misses', async () => {
      const { tidemarkMissed, controlMissed, reads } = await paused(async () => {
        let tidemarkMissed = 0;
        let controlMissed = 0;
        let reads = 0;
        for (let i = 0; i < 20; i++) {
          const me = ++customer;
          const mine = await runWithSession(new Session(), async () => {
            const created = await db.order.create({ data: { customer: me, note: `order ${i}` } });
            const many = await db.order.findMany({ where: { customer: me } });
            const one = await db.order.findUnique({ where: { id: created.id } });
            const count = await db.order.count({ where: { customer: me } });
            return [many.length === 1, one !== null, count === 1];
          });
          reads += mine.length;
          tidemarkMissed += mine.filter((ok) => !ok).length;
          const other = ++customer;
          const created = await control.order.create({
            data: { customer: other, note: 'control' },
          });
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
        `[${target}] prisma (mariadb adapter), replay paused on both replicas: Tidemark missed ${tidemarkMissed}/${reads}, @prisma/extension-read-replicas missed ${controlMissed}/${reads}`,
      );
      expect(tidemarkMissed).toBe(0);
      expect(controlMissed).toBe(reads);
    });

    it('model reads go to replicas once they have the write; writes, raw queries and $primary() to the primary', async () => {
      const me = ++customer;
      await runWithSession(new Session(), async () => {
        await db.order.create({ data: { customer: me, note: 'a' } });
        await caughtUp();
        const before = decisions.length;
        expect(await db.order.findMany({ where: { customer: me } })).toHaveLength(1);
        expect(await db.order.findFirst({ where: { customer: me } })).not.toBeNull();
        expect(await db.order.count({ where: { customer: me } })).toBe(1);
        const routed = decisions.slice(before);
        expect(routed).toHaveLength(3);
        expect(routed.filter((d) => d.target === 'primary')).toEqual([]);

        const none = decisions.length;
        const first = await db.$primary().order.findFirstOrThrow({ where: { customer: me } });
        await db.order.update({ where: { id: first.id }, data: { note: 'b' } });
        const raw = await db.$queryRaw<Array<{ ro: number }>>`select @@global.read_only as ro`;
        expect(Number(raw[0]?.ro)).toBe(0);
        expect(decisions.length).toBe(none);

        const onReplica = await db.$replica().$queryRaw<
          Array<{ ro: number }>
        >`select @@global.read_only as ro`;
        expect(decisions.length).toBe(none + 1);
        expect(Number(onReplica[0]?.ro)).toBe(1);
        // A create is INSERT + SELECT in one transaction on MySQL: refused under $replica(),
        // rather than run on the primary; a raw write there reaches the read-only replica session.
        await expect(
          db.$replica().order.create({ data: { customer: me, note: 'c' } }),
        ).rejects.toMatchObject({ code: PrismaErrorCode.ReplicaInTransaction });
        await expect(
          db.$replica().$executeRaw`insert into orders (customer, note) values (${me}, 'd')`,
        ).rejects.toThrow(/read.only/i);
        expect(await db.$primary().order.count({ where: { customer: me } })).toBe(1);
      });
    });

    it('every column type reads back exactly as @prisma/adapter-mariadb reads it on the primary', async () => {
      const row = {
        big: 9_007_199_254_740_993n, // beyond 2^53: must not pass through a double
        small: -32_768,
        unsigned: 4_294_967_295,
        flag: true,
        ratio: 0.1 + 0.2,
        price: '12345678.9012',
        at: new Date('2026-12-05T17:30:01.234Z'),
        stamp: new Date('2026-12-05T17:30:01.234Z'),
        day: new Date('2026-12-05T00:00:00.000Z'),
        clock: new Date('1970-01-01T23:59:58.765Z'),
        data: { a: [1, 'two', null], huge: 1.5e300, nested: { ok: true } },
        bytes: new Uint8Array([0, 1, 2, 253, 254, 255]),
        text: 'naïve café ☕ \u0000 end',
        tag: 'large' as const,
        year: 2026,
      };
      const session = new Session();
      const { created, viaTidemark } = await runWithSession(session, async () => {
        const created = await db.sample.create({ data: row });
        const viaTidemark = await db.sample.findUniqueOrThrow({ where: { id: created.id } });
        return { created, viaTidemark };
      });
      const direct = await primary.sample.findUniqueOrThrow({ where: { id: created.id } });
      expect(viaTidemark).toEqual(direct);
      // mysql2's text protocol (`query`), as `useTextProtocol` asks, reads the same.
      const text = new PrismaClient({
        adapter: PrismaTidemark(router as never, { mariadb: { useTextProtocol: true } }),
      });
      try {
        const viaText = await runWithSession(session, () =>
          text.sample.findUniqueOrThrow({ where: { id: created.id } }),
        );
        expect(viaText).toEqual(direct);
      } finally {
        await text.$disconnect();
      }
      expect(created).toEqual(direct);
      expect(direct.big).toBe(row.big);
      expect(direct.price.toString()).toBe(row.price);
      expect(direct.data).toEqual(JSON.parse(JSON.stringify(row.data)));
      expect([...direct.bytes]).toEqual([...row.bytes]);
      expect(direct.text).toBe(row.text);
      expect(direct.at.toISOString()).toBe(row.at.toISOString());

      // A null JSON column, and aggregates (Decimal sum, BigInt max) through both.
      const { data: _json, ...withoutJson } = row;
      const bare = await runWithSession(session, () => db.sample.create({ data: withoutJson }));
      expect(bare.data).toBeNull();
      const aggregate = (client: PrismaClient | typeof db) =>
        client.sample.aggregate({ _sum: { price: true }, _max: { big: true }, _count: true });
      expect(await runWithSession(session, () => aggregate(db))).toEqual(await aggregate(primary));
    });

    it('interactive and batch transactions run on the primary and their commits are visible to the next read', async () => {
      const { missed, total } = await paused(async () => {
        let missed = 0;
        let total = 0;
        for (let i = 0; i < 5; i++) {
          const me = ++customer;
          await runWithSession(new Session(), async () => {
            const inside = await db.$transaction(async (tx) => {
              const order = await tx.order.create({ data: { customer: me, note: 'itx' } });
              await tx.item.create({ data: { orderId: order.id, name: 'first' } });
              return tx.order.count({ where: { customer: me } });
            });
            expect(inside).toBe(1);
            await db.$transaction([
              db.order.create({ data: { customer: me, note: 'batch 1' } }),
              db.order.create({ data: { customer: me, note: 'batch 2' } }),
            ]);
            total++;
            const mine = await db.order.findMany({
              where: { customer: me },
              include: { items: true },
            });
            if (mine.length !== 3 || mine.flatMap((o) => o.items).length !== 1) missed++;
          });
        }
        return { missed, total };
      });
      expect(missed).toBe(0);
      expect(total).toBe(5);
      await runWithSession(new Session(), async () => {
        await expect(
          db.$transaction(async (tx) => {
            await tx.order.create({ data: { customer: -5, note: 'rolled back' } });
            throw new Error('abort');
          }),
        ).rejects.toThrow('abort');
        expect(await db.$primary().order.count({ where: { customer: -5 } })).toBe(0);
        await expect(
          db.$transaction(async (tx) => (tx as unknown as typeof db).$replica()),
        ).rejects.toMatchObject({ code: PrismaErrorCode.ReplicaInTransaction });
      });
    });

    it("database errors keep Prisma's codes: a duplicate key is P2002, a missing parent P2003", async () => {
      await runWithSession(new Session(), async () => {
        const order = await db.order.create({ data: { customer: ++customer, note: 'dup' } });
        await expect(
          db.order.create({ data: { id: order.id, customer: customer, note: 'dup' } }),
        ).rejects.toMatchObject({ code: 'P2002' });
        await expect(
          db.item.create({ data: { orderId: -1, name: 'orphan' } }),
        ).rejects.toMatchObject({ code: 'P2003' });
        // The same as @prisma/adapter-mariadb reports them.
        await expect(
          primary.order.create({ data: { id: order.id, customer: customer, note: 'dup' } }),
        ).rejects.toMatchObject({ code: 'P2002' });
      });
    });
  },
);
