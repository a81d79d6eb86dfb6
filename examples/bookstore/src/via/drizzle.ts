import { withReplicas as tidemarkMysqlReplicas } from '@tidemark/drizzle/mysql2';
import { withReplicas as tidemarkPgReplicas } from '@tidemark/drizzle/node-postgres';
import { desc, eq, sql } from 'drizzle-orm';
import * as mysqlCore from 'drizzle-orm/mysql-core';
import { withReplicas as drizzleMysqlReplicas, mysqlSchema } from 'drizzle-orm/mysql-core';
import { drizzle as drizzleMysql } from 'drizzle-orm/mysql2';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import * as pgCore from 'drizzle-orm/pg-core';
import { withReplicas as drizzlePgReplicas, pgSchema } from 'drizzle-orm/pg-core';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { OrderQueries } from '../databases/types.js';
import { LIST_LENGTH } from '../ledger.js';
import type { FrontDoorFactory } from '../strategies/tidemark.js';
import type { StrategyContext } from '../strategies/types.js';
import { lastDecisionTarget } from './decisions.js';
import { naiveStrategy } from './naive.js';
import type { ViaInput, ViaRun, ViaStrategyName, ViaTexts } from './types.js';

export const drizzleTexts: ViaTexts = {
  naive: 'Drizzle with its own withReplicas (drizzle-orm): selects on the replica',
  tidemark:
    'Drizzle with @tidemark/drizzle (withReplicas over the same router as tidemark): selects routed by the session, writes on the primary',
};

/** The demo's table, in the schema (PostgreSQL) or database (MySQL) the raw SQL creates. */
const pgOrdersTable = pgSchema('tidemark_bookstore').table('orders', {
  id: pgCore.bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  customer: pgCore.integer('customer').notNull(),
  createdAt: pgCore.timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  note: pgCore.text('note').notNull(),
});
const mysqlOrdersTable = mysqlSchema('tidemark_bookstore').table('orders', {
  id: mysqlCore.bigint('id', { mode: 'number' }).primaryKey().autoincrement(),
  customer: mysqlCore.int('customer').notNull(),
  // The server fills it (DEFAULT CURRENT_TIMESTAMP(6) in the DDL).
  createdAt: mysqlCore
    .datetime('created_at', { fsp: 6 })
    .notNull()
    .default(sql`CURRENT_TIMESTAMP(6)`),
  note: mysqlCore.text('note').notNull(),
});

type PgDb = ReturnType<typeof pgDatabases>['primary'];
type MysqlDb = ReturnType<typeof mysqlDatabases>['primary'];

const pgOrders: OrderQueries<PgDb> = {
  async placeOrder(db, customer, note) {
    const [row] = await db
      .insert(pgOrdersTable)
      .values({ customer, note })
      .returning({ id: pgOrdersTable.id });
    if (!row) throw new Error('INSERT ... RETURNING id returned no row');
    return row.id;
  },
  async latestOrders(db, customer) {
    const rows = await db
      .select({ id: pgOrdersTable.id })
      .from(pgOrdersTable)
      .where(eq(pgOrdersTable.customer, customer))
      .orderBy(desc(pgOrdersTable.createdAt), desc(pgOrdersTable.id))
      .limit(LIST_LENGTH);
    return rows.map((row) => row.id);
  },
};

const mysqlOrders: OrderQueries<MysqlDb> = {
  async placeOrder(db, customer, note) {
    const [row] = await db.insert(mysqlOrdersTable).values({ customer, note }).$returningId();
    if (!row) throw new Error('INSERT INTO orders reported no insertId');
    return row.id;
  },
  async latestOrders(db, customer) {
    const rows = await db
      .select({ id: mysqlOrdersTable.id })
      .from(mysqlOrdersTable)
      .where(eq(mysqlOrdersTable.customer, customer))
      .orderBy(desc(mysqlOrdersTable.createdAt), desc(mysqlOrdersTable.id))
      .limit(LIST_LENGTH);
    return rows.map((row) => row.id);
  },
};

/** A primary and a replica database, as a Drizzle user sets them up. */
function pgDatabases(context: StrategyContext) {
  const pool = (url: string) => {
    const p = new pg.Pool({ connectionString: url, max: 2 });
    p.on('error', () => undefined);
    return p;
  };
  const primaryPool = pool(context.primaryUrl);
  const replicaPool = pool(context.replicaUrl);
  return {
    primary: drizzlePg(primaryPool),
    replica: drizzlePg(replicaPool),
    end: () => Promise.all([primaryPool.end(), replicaPool.end()]).then(() => undefined),
  };
}

function mysqlDatabases(context: StrategyContext) {
  const primaryPool = mysql.createPool({ uri: context.primaryUrl, connectionLimit: 2 });
  const replicaPool = mysql.createPool({ uri: context.replicaUrl, connectionLimit: 2 });
  return {
    primary: drizzleMysql(primaryPool),
    replica: drizzleMysql(replicaPool),
    end: () => Promise.all([primaryPool.end(), replicaPool.end()]).then(() => undefined),
  };
}

export async function createDrizzlePgRun<C>(
  name: ViaStrategyName,
  input: ViaInput<C>,
): Promise<ViaRun<PgDb>> {
  const dbs = pgDatabases(input.context);
  if (name === 'naive') {
    // Drizzle's own `withReplicas` sends every select to a replica.
    return {
      strategy: naiveStrategy<PgDb>(drizzlePgReplicas(dbs.primary, [dbs.replica]), dbs.end),
      queries: pgOrders,
    };
  }
  const door: FrontDoorFactory<C, PgDb> = (router) => ({
    ...lastDecisionTarget(router, tidemarkPgReplicas(dbs.primary, [dbs.replica], { router })),
    close: dbs.end,
  });
  const strategy = await input.database.createTidemarkStrategy(input.context, input.settings, door);
  return { strategy, queries: pgOrders };
}

export async function createDrizzleMysqlRun<C>(
  name: ViaStrategyName,
  input: ViaInput<C>,
): Promise<ViaRun<MysqlDb>> {
  const dbs = mysqlDatabases(input.context);
  if (name === 'naive') {
    return {
      strategy: naiveStrategy<MysqlDb>(drizzleMysqlReplicas(dbs.primary, [dbs.replica]), dbs.end),
      queries: mysqlOrders,
    };
  }
  const door: FrontDoorFactory<C, MysqlDb> = (router) => ({
    ...lastDecisionTarget(router, tidemarkMysqlReplicas(dbs.primary, [dbs.replica], { router })),
    close: dbs.end,
  });
  const strategy = await input.database.createTidemarkStrategy(input.context, input.settings, door);
  return { strategy, queries: mysqlOrders };
}
