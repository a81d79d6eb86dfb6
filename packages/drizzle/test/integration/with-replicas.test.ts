/**
 * Tidemark's withReplicas on real clusters (a primary and two replicas started by the test
 * harness): PostgreSQL 15, MySQL 9.7 and MariaDB 10.11 by default (TIDEMARK_TARGETS picks
 * others). Each anomaly check runs Drizzle's own withReplicas over the same Drizzle databases as
 * the control, which must show the anomaly.
 */
import { type RouteDecision, type Router, runWithSession, Session } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DrizzleErrorCode } from '../../src/index.js';
import { withReplicas as tidemarkMysqlReplicas } from '../../src/mysql2.js';
import { withReplicas as tidemarkPgReplicas } from '../../src/node-postgres.js';
import { mysqlSides, pgSides, type ReplicatedOps } from './ops.js';
import {
  CREATE_ORDERS,
  clusterAndRouter,
  isPg,
  mysqlDatabase,
  pgDatabase,
  requestedTargets,
  waitForTable,
} from './targets.js';

const targets = requestedTargets();

/** The statement failed because a read-only server (a replica) refused it. */
async function expectReadOnlyRefusal(pending: Promise<unknown>): Promise<void> {
  const error = (await pending.then(
    () => new Error('the statement succeeded'),
    (e: unknown) => e,
  )) as Error & { cause?: Error };
  // Drizzle 0.44+ wraps driver errors in a DrizzleQueryError whose cause is the server's error.
  expect(`${error.message} ${error.cause?.message ?? ''}`).toMatch(/read.only/i);
}

if (targets.length === 0) {
  console.warn(
    `\n*** @tidemark/drizzle integration tests SKIPPED: TIDEMARK_TARGETS=${JSON.stringify(process.env['TIDEMARK_TARGETS'])} names no PostgreSQL or MySQL target. ***\n`,
  );
}

describe.skipIf(targets.length === 0).each(targets)(
  '%s: Drizzle withReplicas through Tidemark',
  (target) => {
    let cluster: Cluster;
    let router: Router<unknown, unknown>;
    /** Tidemark's withReplicas and Drizzle's own, over the same three Drizzle databases. */
    let db: ReplicatedOps;
    let control: ReplicatedOps;
    let closePools: () => Promise<void>;
    const decisions: RouteDecision[] = [];
    let customer = 0;

    beforeAll(async () => {
      ({ cluster, router } = await clusterAndRouter(target));
      router.events.on('decision', (d) => decisions.push(d));
      const urls = [cluster.primary(), ...cluster.replicas()].map((n) => n.url);
      ({
        db,
        control,
        close: closePools,
      } = isPg(target) ? pgSides(urls, router) : mysqlSides(urls, router));
      await cluster.exec(cluster.primary().name, CREATE_ORDERS);
      await waitForTable(cluster, 'orders');
    }, 240_000);

    afterAll(async () => {
      await closePools?.();
      await router?.close();
      await cluster?.teardown();
    });

    /** One "request" of a customer: the session is what the HTTP middleware would give it. */
    const as = <T>(session: Session, fn: () => Promise<T>) => runWithSession(session, fn);

    async function withReplayPaused(names: string[], fn: () => Promise<void>): Promise<void> {
      for (const n of names) await cluster.pauseReplay(n);
      try {
        await fn();
      } finally {
        for (const n of names) await cluster.resumeReplay(n);
        // The monitor would see the resume at its next poll; the next test should not wait for it.
        await router.monitor.refresh();
      }
    }
    const allReplicas = () => cluster.replicas().map((n) => n.name);

    it('read-your-writes with replay paused on every replica; Drizzle withReplicas misses', async () => {
      await withReplayPaused(allReplicas(), async () => {
        const rounds = 10;
        const missed = { tidemark: 0, control: 0 };
        const reads = { tidemark: 0, control: 0 };
        const before = decisions.length;
        for (let i = 0; i < rounds; i++) {
          const me = ++customer;
          const session = new Session();
          await as(session, () => db.insert(me, `order ${i}`));
          // select, $count and a relational query: each one read, each one must see the order.
          const seen = await as(session, async () => [
            (await db.notes(me)).length,
            await db.count(me),
            (await db.related(me)).length,
          ]);
          reads.tidemark += seen.length;
          missed.tidemark += seen.filter((n) => n !== 1).length;
          const other = ++customer;
          await control.insert(other, 'control');
          const controlSeen = [
            (await control.notes(other)).length,
            await control.count(other),
            (await control.related(other)).length,
          ];
          reads.control += controlSeen.length;
          missed.control += controlSeen.filter((n) => n !== 1).length;
        }
        console.log(
          `[${target}] drizzle, replay paused on both replicas, ${rounds} orders, 3 reads each: tidemark missed ${missed.tidemark}/${reads.tidemark}, drizzle withReplicas missed ${missed.control}/${reads.control}`,
        );
        expect(missed.tidemark).toBe(0);
        expect(missed.control).toBe(reads.control);
        // Every Tidemark read was routed by the router (not sent to the primary as a write), and
        // none was served stale; the inserts were not routed reads.
        const routed = decisions.slice(before);
        expect(routed).toHaveLength(reads.tidemark);
        expect(routed.every((d) => !d.stale)).toBe(true);
      });
    });

    it('reads go through the router; writes, $primary, locking selects, raw SQL and with(...).update go to the primary', async () => {
      const session = new Session();
      const me = ++customer;
      const before = decisions.length;
      await as(session, () => db.insert(me, 'a'));
      expect(decisions.length).toBe(before); // an insert is not a routed read
      await as(session, async () => {
        expect(await db.notes(me)).toEqual(['a']);
        expect(await db.distinctNotes(me)).toEqual(['a']);
        expect(await db.viaCte(me)).toEqual(['a']);
        expect(await db.count(me)).toBe(1);
        expect(await db.related(me)).toEqual(['a']);
        if (db.distinctOn) expect(await db.distinctOn(me)).toEqual(['a']);
      });
      const reads = decisions.slice(before);
      expect(reads).toHaveLength(db.distinctOn ? 6 : 5);
      expect(reads.every((d) => d.target !== 'primary')).toBe(true);

      const primaryOnly = decisions.length;
      await as(session, async () => {
        expect(await db.primary.notes(me)).toEqual(['a']);
        expect(await db.primary.count(me)).toBe(1);
        expect(await db.locked(me)).toEqual(['a']);
        expect(await db.rawCount(me)).toBe(1);
        // MariaDB 10.11 has no `with ... update` (a syntax error on any server).
        if (target !== 'mariadb1011') {
          await db.renameViaCte(me, 'renamed');
          expect(await db.primary.notes(me)).toEqual(['renamed']);
        }
      });
      expect(decisions.length).toBe(primaryOnly); // none of them was a routed read
      if (target !== 'mariadb1011') {
        // Drizzle's own withReplicas sends with(...).update to a replica, which refuses it.
        await expectReadOnlyRefusal(control.renameViaCte(me, 'control'));
      }
    });

    it.skipIf(!isPg(target))(
      'a write CTE runs on the primary and its position goes into the session',
      async () => {
        await withReplayPaused(allReplicas(), async () => {
          const session = new Session();
          const me = ++customer;
          const before = decisions.length;
          expect(await as(session, () => db.insertViaWriteCte!(me, 'cte'))).toEqual(['cte']);
          expect(decisions.length).toBe(before); // not a routed read: it ran on the primary
          const onPrimary = (await cluster.exec(
            cluster.primary().name,
            `select count(*) as n from orders where customer = ${me}`,
          )) as Array<{ n: number | string }>;
          expect(Number(onPrimary[0]?.n)).toBe(1);
          // Read back with replay paused: only the primary has it, and the session knows it must.
          expect(await as(session, () => db.notes(me))).toEqual(['cte']);
          // Drizzle's own withReplicas sends the write CTE to a replica, which refuses it.
          await expectReadOnlyRefusal(control.insertViaWriteCte!(++customer, 'control'));
        });
      },
    );

    it('transactions run on the primary, reads inside included; the commit is read back, a rollback is gone', async () => {
      await withReplayPaused(allReplicas(), async () => {
        const session = new Session();
        const me = ++customer;
        const before = decisions.length;
        const inside = await as(session, () =>
          db.transaction(async (tx) => {
            await tx.insert(me, 'tx');
            return [await tx.notes(me), await tx.count(me), await tx.related(me)];
          }),
        );
        expect(inside).toEqual([['tx'], 1, ['tx']]);
        expect(decisions.length).toBe(before); // the reads in the transaction were not routed
        // After the commit, with replay still paused: the session needs the commit.
        expect(await as(session, () => db.notes(me))).toEqual(['tx']);

        const gone = ++customer;
        await expect(
          as(session, () =>
            db.transaction(async (tx) => {
              await tx.insert(gone, 'rolled back');
              throw new Error('abort');
            }),
          ),
        ).rejects.toThrow('abort');
        expect(await as(session, () => db.notes(gone))).toEqual([]);
        const onPrimary = (await cluster.exec(
          cluster.primary().name,
          `select count(*) as n from orders where customer = ${gone}`,
        )) as Array<{ n: number | string }>;
        expect(Number(onPrimary[0]?.n)).toBe(0);

        // The isolation level reaches the server; a nested transaction is a savepoint.
        const sp = ++customer;
        const level = await as(session, () =>
          db.transaction(async (tx) => {
            await tx.insert(sp, 'kept');
            await tx
              .nested(async (inner) => {
                await inner.insert(sp, 'undone');
                throw new Error('undo');
              })
              .catch(() => undefined);
            return tx.isolation();
          }, true),
        );
        expect(level.toLowerCase()).toMatch(/serializable/);
        expect(await as(session, () => db.notes(sp))).toEqual(['kept']);
      });
    });

    it('misuse gets typed errors', async () => {
      const replicas = (isPg(target) ? tidemarkPgReplicas : tidemarkMysqlReplicas) as unknown as (
        primary: unknown,
        replicas: unknown,
        options: unknown,
      ) => unknown;
      // Databases over pools that never connect (both drivers connect lazily).
      const pgDb = pgDatabase('postgres://127.0.0.1:1/none');
      const mysqlDb = mysqlDatabase('mysql://127.0.0.1:1/none');
      const [mine, theirs] = isPg(target) ? [pgDb, mysqlDb] : [mysqlDb, pgDb];
      try {
        expect(() => replicas({}, [mine], { router })).toThrow(
          expect.objectContaining({ code: DrizzleErrorCode.UnsupportedDriver }),
        );
        // The other flavour's database, or a withReplicas result, is not a database it can rebuild.
        expect(() => replicas(theirs, [theirs], { router })).toThrow(
          expect.objectContaining({ code: DrizzleErrorCode.UnsupportedDriver }),
        );
        const replicated = replicas(mine, [mine], { router });
        expect(() => replicas(replicated, [mine], { router })).toThrow(
          expect.objectContaining({ code: DrizzleErrorCode.UnsupportedDriver }),
        );
        // Drizzle's getReplica in the third argument: the router picks replicas here.
        expect(() => replicas(mine, [mine], (r: unknown[]) => r[0])).toThrow(
          expect.objectContaining({ code: 'TIDEMARK_CONFIG' }),
        );
        expect(() => replicas(mine, [mine], {})).toThrow(
          expect.objectContaining({ code: 'TIDEMARK_CONFIG' }),
        );
      } finally {
        await pgDb.$client.end();
        await mysqlDb.$client.promise().end();
      }
      if (db.iterate) {
        // mysql2 .iterator() holds one connection for the stream: not outside a transaction...
        await expect(db.iterate(1)).rejects.toMatchObject({ code: DrizzleErrorCode.NotRoutable });
        // ...but inside one, where the connection is held anyway.
        const me = ++customer;
        const rows = await as(new Session(), () =>
          db.transaction(async (tx) => {
            await tx.insert(me, 'streamed');
            return tx.iterate!(me);
          }),
        );
        expect(rows).toEqual(['streamed']);
      }
    });
  },
);
