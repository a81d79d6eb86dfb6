/**
 * The same Drizzle calls on PostgreSQL (node-postgres) and MySQL/MariaDB (mysql2) databases, so
 * one test body covers both: each operation is written once per flavour with that flavour's own
 * Drizzle API, on a Tidemark `withReplicas`, on Drizzle's own `withReplicas` (the control), or on
 * a transaction.
 */
import { eq, inArray, sql } from 'drizzle-orm';
import type { MySQLWithReplicas, MySqlDatabase } from 'drizzle-orm/mysql-core';
import type { MySql2PreparedQueryHKT, MySql2QueryResultHKT } from 'drizzle-orm/mysql2';
import type { NodePgQueryResultHKT } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgWithReplicas } from 'drizzle-orm/pg-core';
import { mysqlOrders, pgOrders } from './targets.js';

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

export function pgOps(db: PgDb): Ops {
  const o = pgOrders;
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
    rawCount: async (c) => {
      const result = await db.execute<{ n: number }>(
        sql`select count(*)::int as n from orders where customer = ${c}`,
      );
      return Number(result.rows[0]?.n);
    },
    renameViaCte: async (c, note) => {
      const mine = db.$with('mine').as(db.select({ id: o.id }).from(o).where(eq(o.customer, c)));
      await db
        .with(mine)
        .update(o)
        .set({ note })
        .where(inArray(o.id, db.select({ id: mine.id }).from(mine)));
    },
    isolation: async () => {
      const result = await db.execute<{ level: string }>(
        sql`select current_setting('transaction_isolation') as level`,
      );
      return String(result.rows[0]?.level);
    },
  };
}

export function pgReplicatedOps(db: PgWithReplicas<PgDb>): ReplicatedOps {
  const o = pgOrders;
  return {
    ...pgOps(db),
    primary: pgOps(db.$primary),
    transaction: (fn, serializable) =>
      db.transaction(
        (tx) =>
          fn({ ...pgOps(tx), nested: (inner) => tx.transaction((deeper) => inner(pgOps(deeper))) }),
        serializable ? { isolationLevel: 'serializable' } : undefined,
      ),
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

type MysqlSchema = { orders: typeof mysqlOrders };
type MysqlDb = MySqlDatabase<MySql2QueryResultHKT, MySql2PreparedQueryHKT, MysqlSchema>;

export function mysqlOps(db: MysqlDb): Ops {
  const o = mysqlOrders;
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
    rawCount: async (c) => {
      const [rows] = (await db.execute(
        sql`select count(*) as n from orders where customer = ${c}`,
      )) as unknown as [Array<{ n: number | string }>];
      return Number(rows[0]?.n);
    },
    renameViaCte: async (c, note) => {
      const mine = db.$with('mine').as(db.select({ id: o.id }).from(o).where(eq(o.customer, c)));
      await db
        .with(mine)
        .update(o)
        .set({ note })
        .where(inArray(o.id, db.select({ id: mine.id }).from(mine)));
    },
    isolation: async () => {
      // MySQL's @@transaction_isolation is the session's level, not this transaction's: ask
      // InnoDB about the transaction once it has touched a table.
      await db.select({ id: o.id }).from(o).limit(1);
      const [rows] = (await db.execute(
        sql`select trx_isolation_level as level from information_schema.innodb_trx where trx_mysql_thread_id = connection_id()`,
      )) as unknown as [Array<{ level: string }>];
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

export function mysqlReplicatedOps(db: MySQLWithReplicas<MysqlDb>): ReplicatedOps {
  return {
    ...mysqlOps(db),
    primary: mysqlOps(db.$primary),
    transaction: (fn, serializable) =>
      db.transaction(
        (tx) =>
          fn({
            ...mysqlOps(tx),
            nested: (inner) => tx.transaction((deeper) => inner(mysqlOps(deeper))),
          }),
        serializable ? { isolationLevel: 'serializable' } : undefined,
      ),
  };
}
