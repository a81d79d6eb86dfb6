/**
 * The conformance suite's orders through Drizzle: Tidemark's `withReplicas` over the router, and
 * Drizzle's own `withReplicas` over the same nodes as the control. The suite's `orders` table
 * (bigint ids it chooses) on both SQL flavours.
 */
import type { FrontDoor, OrderClient } from '@tidemark/conformance';
import type { Router } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { desc, eq } from 'drizzle-orm';
import {
  withReplicas as drizzleMysqlReplicas,
  type MySQLWithReplicas,
  bigint as mysqlBigint,
  mysqlTable,
  varchar,
} from 'drizzle-orm/mysql-core';
import { drizzle as drizzleMysql } from 'drizzle-orm/mysql2';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import {
  bigint,
  withReplicas as drizzlePgReplicas,
  type PgWithReplicas,
  pgTable,
  text,
} from 'drizzle-orm/pg-core';
import mysql from 'mysql2';
import pg from 'pg';
import { withReplicas as tidemarkMysqlReplicas } from '../../src/mysql2.js';
import { withReplicas as tidemarkPgReplicas } from '../../src/node-postgres.js';

const pgOrders = pgTable('orders', {
  id: bigint('id', { mode: 'number' }).primaryKey(),
  customer: bigint('customer', { mode: 'number' }).notNull(),
  note: text('note').notNull(),
});

const mysqlOrders = mysqlTable('orders', {
  id: mysqlBigint('id', { mode: 'number' }).primaryKey(),
  customer: mysqlBigint('customer', { mode: 'number' }).notNull(),
  note: varchar('note', { length: 200 }).notNull(),
});

const POOL_SIZE = 2;

/** A Drizzle database of the flavour over each node, primary first, and how to end their pools. */
function pgNodes(cluster: Cluster) {
  const pools = [cluster.primary(), ...cluster.replicas()].map(
    (node) => new pg.Pool({ connectionString: node.url, max: POOL_SIZE }),
  );
  const [primary, ...replicas] = pools.map((client) => drizzlePg({ client }));
  return {
    primary: primary!,
    replicas: replicas as [(typeof replicas)[number], ...typeof replicas],
    close: async () => {
      await Promise.all(pools.map((pool) => pool.end()));
    },
  };
}

function mysqlNodes(cluster: Cluster) {
  const pools = [cluster.primary(), ...cluster.replicas()].map((node) =>
    mysql.createPool({ uri: node.url, connectionLimit: POOL_SIZE }),
  );
  const [primary, ...replicas] = pools.map((client) => drizzleMysql({ client }));
  return {
    primary: primary!,
    replicas: replicas as [(typeof replicas)[number], ...typeof replicas],
    close: async () => {
      await Promise.all(pools.map((pool) => new Promise((done) => pool.end(done))));
    },
  };
}

type PgReplicated = PgWithReplicas<ReturnType<typeof pgNodes>['primary']>;
type MysqlReplicated = MySQLWithReplicas<ReturnType<typeof mysqlNodes>['primary']>;

/**
 * The two queries, spelled the same way on both flavours. Drizzle's MySQL builders take the same
 * arguments as its PostgreSQL ones and differ in types only, so a MySQL database comes here typed
 * as a PostgreSQL one (as in the integration tests' ops.ts); what runs is its own dialect.
 */
function client(
  db: PgReplicated | MysqlReplicated,
  close: () => Promise<void>,
  flavour: 'pg' | 'mysql',
): OrderClient {
  const typed = db as PgReplicated;
  const o = flavour === 'pg' ? pgOrders : (mysqlOrders as unknown as typeof pgOrders);
  return {
    async insertOrder(order) {
      await typed.insert(o).values(order);
    },
    async ordersOf(customer) {
      const rows = await typed
        .select({ id: o.id })
        .from(o)
        .where(eq(o.customer, customer))
        .orderBy(desc(o.id))
        .limit(20);
      return rows.map((row) => Number(row.id));
    },
    close,
  };
}

/** Drizzle over node-postgres (`pg` targets) or mysql2 (MySQL and MariaDB targets). */
export function drizzleFrontDoor(flavour: 'pg' | 'mysql'): FrontDoor {
  return {
    name: 'drizzle',
    open(router: Router<unknown, unknown>, cluster) {
      if (flavour === 'pg') {
        const nodes = pgNodes(cluster);
        return client(
          tidemarkPgReplicas(nodes.primary, nodes.replicas, { router: router as never }),
          nodes.close,
          flavour,
        );
      }
      const nodes = mysqlNodes(cluster);
      return client(
        tidemarkMysqlReplicas(nodes.primary, nodes.replicas, { router: router as never }),
        nodes.close,
        flavour,
      );
    },
    openNaive(cluster) {
      if (flavour === 'pg') {
        const nodes = pgNodes(cluster);
        return client(drizzlePgReplicas(nodes.primary, nodes.replicas), nodes.close, flavour);
      }
      const nodes = mysqlNodes(cluster);
      return client(drizzleMysqlReplicas(nodes.primary, nodes.replicas), nodes.close, flavour);
    },
  };
}
