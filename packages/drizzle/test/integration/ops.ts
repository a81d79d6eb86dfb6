/**
 * The same Drizzle calls on PostgreSQL (node-postgres) and MySQL/MariaDB (mysql2) databases, so
 * one test body covers both, on a Tidemark `withReplicas`, on Drizzle's own `withReplicas` (the
 * control), or on a transaction.
 */
import type { Router } from '@tidemark/core';
import { eq, inArray, sql } from 'drizzle-orm';
import {
  withReplicas as drizzleMysqlReplicas,
  type MySQLWithReplicas,
  type MySqlDatabase,
} from 'drizzle-orm/mysql-core';
import type { MySql2PreparedQueryHKT, MySql2QueryResultHKT } from 'drizzle-orm/mysql2';
import type { NodePgQueryResultHKT } from 'drizzle-orm/node-postgres';
import {
  withReplicas as drizzlePgReplicas,
  type PgDatabase,
  type PgWithReplicas,
} from 'drizzle-orm/pg-core';
import { withReplicas as tidemarkMysqlReplicas } from '../../src/mysql2.js';
import { withReplicas as tidemarkPgReplicas } from '../../src/node-postgres.js';
import { mysqlDatabase, mysqlOrders, pgDatabase, pgOrders } from './targets.js';

/** Reads and writes any database of the flavour offers (a replicated one, `$primary`, a `tx`). */
export interface Ops {
  insert(customer: number, note: string): Promise<void>;
  /** `select` */
  notes(customer: number): Promise<string[]>;
  /** `selectDistinct` */
  distinctNotes(customer: number): Promise<string[]>;
  /** `$count` */
  count(customer: number): Promise<number>;
  /** relational `query.orders.findMany` */
  related(customer: number): Promise<string[]>;
  /** `with(select CTE).select()` */
  viaCte(customer: number): Promise<string[]>;
  /** `select ... for update` */
  locked(customer: number): Promise<string[]>;
  /** `execute(sql)`: raw SQL */
  rawCount(customer: number): Promise<number>;
  /** `with(select CTE).update(...)`: a write that starts with `with` */
  renameViaCte(customer: number, note: string): Promise<void>;
  /** The isolation level of the current transaction (inside one). */
  isolation(): Promise<string>;
  /** MySQL only: `select ... .iterator()` (mysql2 streams on one connection). */
  iterate?(customer: number): Promise<string[]>;
}

/** A `withReplicas` database: the operations plus `$primary` and transactions. */
export interface ReplicatedOps extends Ops {
  readonly primary: Ops;
  transaction<T>(fn: (tx: Ops & Nested) => Promise<T>, serializable?: boolean): Promise<T>;
  /** PostgreSQL only: `with added as (insert ... returning) select from added`. */
  insertViaWriteCte?(customer: number, note: string): Promise<string[]>;
  /** PostgreSQL only: `selectDistinctOn`. */
  distinctOn?(customer: number): Promise<string[]>;
}

export interface Nested {
  /** A nested transaction (a savepoint). */
  nested<T>(fn: (tx: Ops) => Promise<T>): Promise<T>;
}

const notes = (rows: Array<{ note: string }>) => rows.map((r) => r.note);

type PgSchema = { orders: typeof pgOrders };
type PgDb = PgDatabase<NodePgQueryResultHKT, PgSchema>;
type MysqlSchema = { orders: typeof mysqlOrders };
type MysqlDb = MySqlDatabase<MySql2QueryResultHKT, MySql2PreparedQueryHKT, MysqlSchema>;

/**
 * The calls both dialects spell the same way. Drizzle's PostgreSQL and MySQL builders have these
 * methods with the same arguments, and their types differ by dialect only, so a MySQL database
 * comes here typed as a PostgreSQL one; what runs is the database's own dialect.
 */
function sharedOps(db: PgDb, o: typeof pgOrders): Omit<Ops, 'rawCount' | 'isolation' | 'iterate'> {
  return {
    insert: async (customer, note) => {
      await db.insert(o).values({ customer, note });
    },
    notes: async (c) => notes(await db.select({ note: o.note }).from(o).where(eq(o.customer, c))),
    distinctNotes: async (c) =>
      notes(await db.selectDistinct({ note: o.note }).from(o).where(eq(o.customer, c))),
    count: (c) => db.$count(o, eq(o.customer, c)),
    related: async (c) => notes(await db.query.orders.findMany({ where: eq(o.customer, c) })),
    viaCte: async (c) => {
      const mine = db
        .$with('mine')
        .as(db.select({ note: o.note }).from(o).where(eq(o.customer, c)));
      return notes(await db.with(mine).select().from(mine));
    },
    locked: async (c) =>
      notes(await db.select({ note: o.note }).from(o).where(eq(o.customer, c)).for('update')),
    renameViaCte: async (c, note) => {
      const mine = db.$with('mine').as(db.select({ id: o.id }).from(o).where(eq(o.customer, c)));
      await db
        .with(mine)
        .update(o)
        .set({ note })
        .where(inArray(o.id, db.select({ id: mine.id }).from(mine)));
    },
  };
}

export function pgOps(db: PgDb): Ops {
  return {
    ...sharedOps(db, pgOrders),
    rawCount: async (c) => {
      const result = await db.execute<{ n: number }>(
        sql`select count(*)::int as n from orders where customer = ${c}`,
      );
      return Number(result.rows[0]?.n);
    },
    isolation: async () => {
      const result = await db.execute<{ level: string }>(
        sql`select current_setting('transaction_isolation') as level`,
      );
      return String(result.rows[0]?.level);
    },
  };
}

export function mysqlOps(db: MysqlDb): Ops {
  const o = mysqlOrders;
  /** mysql2 answers `execute` with `[rows, fields]`. */
  const rowsOf = async <R>(text: ReturnType<typeof sql>) =>
    ((await db.execute(text)) as unknown as [R[]])[0];
  return {
    ...sharedOps(db as unknown as PgDb, o as unknown as typeof pgOrders),
    rawCount: async (c) => {
      const rows = await rowsOf<{ n: number }>(
        sql`select count(*) as n from orders where customer = ${c}`,
      );
      return Number(rows[0]?.n);
    },
    isolation: async () => {
      // MySQL's @@transaction_isolation is the session's level, not this transaction's: ask
      // InnoDB about the transaction once it has touched a table.
      await db.select({ id: o.id }).from(o).limit(1);
      const rows = await rowsOf<{ level: string }>(
        sql`select trx_isolation_level as level from information_schema.innodb_trx where trx_mysql_thread_id = connection_id()`,
      );
      return String(rows[0]?.level);
    },
    iterate: async (c) => {
      const out: string[] = [];
      const query = db.select({ note: o.note }).from(o).where(eq(o.customer, c));
      for await (const row of query.iterator()) out.push(row.note);
      return out;
    },
  };
}

/** `$primary` and transactions of a `withReplicas` database (typed as PostgreSQL's, as above). */
function replicatedOps(db: PgWithReplicas<PgDb>, ops: (db: PgDb) => Ops): ReplicatedOps {
  return {
    ...ops(db),
    primary: ops(db.$primary),
    transaction: (fn, serializable) =>
      db.transaction(
        (tx) =>
          fn({ ...ops(tx), nested: (inner) => tx.transaction((deeper) => inner(ops(deeper))) }),
        serializable ? { isolationLevel: 'serializable' } : undefined,
      ),
  };
}

export function pgReplicatedOps(db: PgWithReplicas<PgDb>): ReplicatedOps {
  const o = pgOrders;
  return {
    ...replicatedOps(db, pgOps),
    insertViaWriteCte: async (customer, note) => {
      const added = db
        .$with('added')
        .as(db.insert(o).values({ customer, note }).returning({ note: o.note }));
      return notes(await db.with(added).select().from(added));
    },
    distinctOn: async (c) =>
      notes(
        await db
          .selectDistinctOn([o.note], { note: o.note })
          .from(o)
          .where(eq(o.customer, c))
          .orderBy(o.note),
      ),
  };
}

export function mysqlReplicatedOps(db: MySQLWithReplicas<MysqlDb>): ReplicatedOps {
  return replicatedOps(db as unknown as PgWithReplicas<PgDb>, (d) =>
    mysqlOps(d as unknown as MysqlDb),
  );
}

/** Tidemark's withReplicas and Drizzle's own over the same three Drizzle databases. */
export interface Sides {
  readonly db: ReplicatedOps;
  readonly control: ReplicatedOps;
  close(): Promise<void>;
}

function sides<D>(
  urls: string[],
  open: (url: string) => D,
  close: (db: D) => Promise<void>,
  wrap: (primary: D, replicas: [D, ...D[]]) => [ReplicatedOps, ReplicatedOps],
): Sides {
  const [primary, ...replicas] = urls.map(open) as [D, D, ...D[]];
  const [db, control] = wrap(primary, replicas as [D, ...D[]]);
  return {
    db,
    control,
    close: async () => {
      for (const d of [primary, ...replicas]) await close(d);
    },
  };
}

/** `urls`: the primary's first, then the replicas'. */
export function pgSides(urls: string[], router: Router<unknown, unknown>): Sides {
  return sides(
    urls,
    pgDatabase,
    (d) => d.$client.end(),
    (primary, replicas) => [
      pgReplicatedOps(tidemarkPgReplicas(primary, replicas, { router })),
      pgReplicatedOps(drizzlePgReplicas(primary, replicas)),
    ],
  );
}

export function mysqlSides(urls: string[], router: Router<unknown, unknown>): Sides {
  return sides(
    urls,
    mysqlDatabase,
    (d) => d.$client.promise().end(),
    (primary, replicas) => [
      mysqlReplicatedOps(tidemarkMysqlReplicas(primary, replicas, { router })),
      mysqlReplicatedOps(drizzleMysqlReplicas(primary, replicas)),
    ],
  );
}
