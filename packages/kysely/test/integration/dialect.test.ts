/**
 * The Kysely dialect on real clusters (a primary and two replicas started by the test harness):
 * PostgreSQL 15 and MySQL 9.7 by default (TIDEMARK_TARGETS picks others: pg18, pg19,
 * mariadb1011). Each read-your-writes check runs kysely-replication (the Kysely ecosystem's
 * replica helper, round robin) on the same cluster as the control, which must miss.
 */
import { type RouteDecision, Router, runWithSession, Session } from '@tidemark/core';
import { createMysqlAdapter } from '@tidemark/mysql';
import { createPgAdapter } from '@tidemark/pg';
import { type Cluster, startCluster, waitForTable } from '@tidemark/test-clusters';
import { type Dialect, type Generated, Kysely, MysqlDialect, PostgresDialect, sql } from 'kysely';
import { KyselyReplicationDialect } from 'kysely-replication';
import { RoundRobinReplicaStrategy } from 'kysely-replication/strategy/round-robin';
import mysql from 'mysql2';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KyselyErrorCode, TidemarkDialect } from '../../src/index.js';

interface Database {
  orders: { id: Generated<number>; customer: number; note: string };
}

const KNOWN = ['pg15', 'pg18', 'pg19', 'mysql97', 'mariadb1011'];
const requested = (process.env['TIDEMARK_TARGETS'] ?? 'pg15,mysql97')
  .split(',')
  .map((t) => t.trim())
  .filter((t) => KNOWN.includes(t));
if (requested.length === 0) {
  console.warn(
    `\n*** @tidemark/kysely integration tests SKIPPED: TIDEMARK_TARGETS=${JSON.stringify(process.env['TIDEMARK_TARGETS'])} names no PostgreSQL or MySQL target. ***\n`,
  );
}

const isPg = (target: string) => target.startsWith('pg');

describe.skipIf(requested.length === 0).each(requested)('%s: Kysely through Tidemark', (target) => {
  let cluster: Cluster;
  let router: Router<unknown, unknown>;
  let db: Kysely<Database>;
  let control: Kysely<Database>;
  const decisions: RouteDecision[] = [];
  let customer = 0;

  function plainDialect(url: string): Dialect {
    return isPg(target)
      ? new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 4 }) })
      : new MysqlDialect({ pool: mysql.createPool({ uri: url, connectionLimit: 4 }) as never });
  }

  beforeAll(async () => {
    cluster = await startCluster(target, { replicas: 2 });
    const replicas = Object.fromEntries(cluster.replicas().map((n) => [n.name, n.url]));
    const adapter = isPg(target)
      ? createPgAdapter({ primary: cluster.primary().url, replicas, poolSize: 4 })
      : createMysqlAdapter({
          flavour: target === 'mariadb1011' ? 'mariadb' : 'mysql',
          primary: cluster.primary().url,
          replicas,
          poolSize: 4,
        });
    router = new Router({ adapter: adapter as never, cluster: 'main' });
    router.events.on('decision', (d) => decisions.push(d));
    await router.ready();
    db = new Kysely<Database>({
      dialect: new TidemarkDialect({ router, database: isPg(target) ? 'postgres' : 'mysql' }),
    });
    control = new Kysely<Database>({
      dialect: new KyselyReplicationDialect({
        primaryDialect: plainDialect(cluster.primary().url),
        replicaDialects: cluster.replicas().map((n) => plainDialect(n.url)) as [
          Dialect,
          ...Dialect[],
        ],
        replicaStrategy: new RoundRobinReplicaStrategy({}),
      }),
    });
    const id = isPg(target) ? 'serial primary key' : 'int auto_increment primary key';
    await sql`create table orders (id ${sql.raw(id)}, customer int not null, note varchar(100) not null)`.execute(
      db,
    );
    await waitForTable(cluster, 'orders');
  }, 240_000);

  afterAll(async () => {
    await db?.destroy();
    await control?.destroy();
    await router?.close();
    await cluster?.teardown();
  });

  /** One "request" of a customer: the session is what the HTTP middleware would give it. */
  const asCustomer = <T>(session: Session, fn: () => Promise<T>) => runWithSession(session, fn);

  it('read-your-writes with replay paused on every replica; kysely-replication misses', async () => {
    for (const n of cluster.replicas()) await cluster.pauseReplay(n.name);
    try {
      let tidemarkMissing = 0;
      let controlMissing = 0;
      for (let i = 0; i < 10; i++) {
        const me = ++customer;
        const session = new Session();
        await asCustomer(session, () =>
          db
            .insertInto('orders')
            .values({ customer: me, note: `order ${i}` })
            .execute(),
        );
        const mine = await asCustomer(session, () =>
          db.selectFrom('orders').select(['note']).where('customer', '=', me).execute(),
        );
        if (mine.length !== 1) tidemarkMissing++;
        const other = ++customer;
        await control.insertInto('orders').values({ customer: other, note: 'control' }).execute();
        const seen = await control
          .selectFrom('orders')
          .select(['note'])
          .where('customer', '=', other)
          .execute();
        if (seen.length !== 1) controlMissing++;
      }
      console.log(
        `[${target}] kysely, replay paused: tidemark missing ${tidemarkMissing}/10, kysely-replication missing ${controlMissing}/10`,
      );
      expect(tidemarkMissing).toBe(0);
      expect(controlMissing).toBe(10);
    } finally {
      for (const n of cluster.replicas()) await cluster.resumeReplay(n.name);
      // The monitor would see the resume at its next poll; the next test should not wait for it.
      await router.monitor.refresh();
    }
  });

  it('selects go to replicas, writes never do; a write CTE and a locking select stay on the primary', async () => {
    const session = new Session();
    const me = ++customer;
    const before = decisions.length;
    await asCustomer(session, async () => {
      await db.insertInto('orders').values({ customer: me, note: 'a' }).execute();
      await db.selectFrom('orders').selectAll().where('customer', '=', me).execute();
    });
    const reads = decisions.slice(before);
    expect(reads).toHaveLength(1); // the insert is not a routed read
    expect(reads[0]).toMatchObject({ target: expect.not.stringMatching(/^primary$/) });
    const locking = decisions.length;
    await asCustomer(session, () =>
      db
        .transaction()
        .execute((trx) =>
          trx.selectFrom('orders').selectAll().where('customer', '=', me).forUpdate().execute(),
        ),
    );
    await asCustomer(session, () =>
      db.selectFrom('orders').selectAll().where('customer', '=', me).forUpdate().execute(),
    );
    expect(decisions.length).toBe(locking); // both on the primary, not routed as reads
    if (isPg(target)) {
      const cte = decisions.length;
      const rows = await asCustomer(session, () =>
        db
          .with('added', (q) =>
            q.insertInto('orders').values({ customer: me, note: 'cte' }).returning(['note']),
          )
          .selectFrom('added')
          .select(['note'])
          .execute(),
      );
      expect(rows).toEqual([{ note: 'cte' }]);
      expect(decisions.length).toBe(cte);
    }
  });

  it('transactions run on the primary; a committed one is read back, a rolled back one is gone', async () => {
    for (const n of cluster.replicas()) await cluster.pauseReplay(n.name);
    try {
      const session = new Session();
      const me = ++customer;
      const inside = await asCustomer(session, () =>
        db.transaction().execute(async (trx) => {
          await trx.insertInto('orders').values({ customer: me, note: 'tx' }).execute();
          return trx.selectFrom('orders').select(['note']).where('customer', '=', me).execute();
        }),
      );
      expect(inside).toEqual([{ note: 'tx' }]);
      const after = await asCustomer(session, () =>
        db.selectFrom('orders').select(['note']).where('customer', '=', me).execute(),
      );
      expect(after).toEqual([{ note: 'tx' }]);
      const gone = ++customer;
      await expect(
        asCustomer(session, () =>
          db.transaction().execute(async (trx) => {
            await trx
              .insertInto('orders')
              .values({ customer: gone, note: 'rolled back' })
              .execute();
            throw new Error('abort');
          }),
        ),
      ).rejects.toThrow('abort');
      const none = await asCustomer(session, () =>
        db.selectFrom('orders').select(['note']).where('customer', '=', gone).execute(),
      );
      expect(none).toEqual([]);
      const onPrimary = (await cluster.exec(
        cluster.primary().name,
        `select count(*) as n from orders where customer = ${gone}`,
      )) as Array<{ n: number | string }>;
      expect(Number(onPrimary[0]?.n)).toBe(0);
      // Isolation level and savepoints reach the server.
      const level = await asCustomer(session, () =>
        db
          .transaction()
          .setIsolationLevel('serializable')
          .execute(async (trx) => {
            if (isPg(target)) {
              return sql<{
                level: string;
              }>`select current_setting('transaction_isolation') as level`.execute(trx);
            }
            // MySQL's @@transaction_isolation shows the session's level, not this transaction's:
            // ask InnoDB about the transaction once it has touched a table.
            await trx.selectFrom('orders').select(['id']).limit(1).execute();
            return sql<{
              level: string;
            }>`select trx_isolation_level as level from information_schema.innodb_trx where trx_mysql_thread_id = connection_id()`.execute(
              trx,
            );
          }),
      );
      expect(level.rows[0]?.level.toLowerCase()).toMatch(/serializable/);
    } finally {
      for (const n of cluster.replicas()) await cluster.resumeReplay(n.name);
      // The monitor would see the resume at its next poll; the next test should not wait for it.
      await router.monitor.refresh();
    }
  });

  // Controlled transactions (`startTransaction`, savepoints) came with Kysely 0.28; the oldest
  // supported version (scripts/integrations/oldest.sh) has only `transaction().execute()`.
  const controlled = typeof Kysely.prototype.startTransaction === 'function';
  if (!controlled) {
    console.warn(
      '\n*** controlled transactions NOT TESTED (not a pass): this Kysely has no startTransaction (added in 0.28). ***\n',
    );
  }
  it.skipIf(!controlled)(
    'controlled transactions: a savepoint rolled back, the rest committed and read back',
    async () => {
      const session = new Session();
      const sp = ++customer;
      // Replay paused: the read below sees the commit only if its position reached the session
      // the transaction began in.
      for (const n of cluster.replicas()) await cluster.pauseReplay(n.name);
      await asCustomer(session, async () => {
        const trx = await db.startTransaction().execute();
        await trx.insertInto('orders').values({ customer: sp, note: 'kept' }).execute();
        const withSavepoint = await trx.savepoint('sp1').execute();
        await withSavepoint.insertInto('orders').values({ customer: sp, note: 'undone' }).execute();
        const back = await withSavepoint.rollbackToSavepoint('sp1').execute();
        await back.commit().execute();
      });
      const kept = await asCustomer(session, () =>
        db.selectFrom('orders').select(['note']).where('customer', '=', sp).execute(),
      );
      expect(kept).toEqual([{ note: 'kept' }]);
      for (const n of cluster.replicas()) await cluster.resumeReplay(n.name);
      await router.monitor.refresh();
    },
  );

  it('misuse gets typed errors', async () => {
    const driver = new TidemarkDialect({
      router,
      database: isPg(target) ? 'postgres' : 'mysql',
    }).createDriver();
    const connection = await driver.acquireConnection();
    await expect(driver.commitTransaction(connection)).rejects.toMatchObject({
      code: KyselyErrorCode.TransactionState,
    });
    expect(() => new TidemarkDialect({ router, database: 'sqlite' as never })).toThrow(
      expect.objectContaining({ code: 'TIDEMARK_CONFIG' }),
    );
    // A write sent down a read route fails on the read-only connection, not silently.
    await expect(
      router.read(new Session(), (c: unknown) =>
        isPg(target)
          ? (c as pg.PoolClient).query("insert into orders (customer, note) values (0, 'x')")
          : (c as unknown as { query(s: string): Promise<unknown> }).query(
              "insert into orders (customer, note) values (0, 'x')",
            ),
      ),
    ).rejects.toThrow();
  });
});
