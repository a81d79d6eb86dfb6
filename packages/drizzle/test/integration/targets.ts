/**
 * What the integration tests share: which cluster targets run, and one `orders` table per SQL
 * flavour with plain Drizzle databases over pools of a cluster's nodes.
 */
import { loadTarget } from '@tidemark/conformance';
import { Router } from '@tidemark/core';
import type { Adapter } from '@tidemark/core/adapter';
import type { Cluster } from '@tidemark/test-clusters';
import {
  int,
  serial as mysqlSerial,
  mysqlTable,
  varchar as mysqlVarchar,
} from 'drizzle-orm/mysql-core';
import { drizzle as drizzleMysql, type MySql2Database } from 'drizzle-orm/mysql2';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { integer, pgTable, serial, varchar } from 'drizzle-orm/pg-core';
import mysql from 'mysql2';
import pg from 'pg';

const KNOWN = ['pg15', 'pg18', 'pg19', 'mysql97', 'mariadb1011'];

/** TIDEMARK_TARGETS (default pg15, mysql97, mariadb1011), limited to what this package supports. */
export function requestedTargets(): string[] {
  return (process.env['TIDEMARK_TARGETS'] ?? 'pg15,mysql97,mariadb1011')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => KNOWN.includes(t));
}

export const isPg = (target: string) => target.startsWith('pg');

export const pgOrders = pgTable('orders', {
  id: serial('id').primaryKey(),
  customer: integer('customer').notNull(),
  note: varchar('note', { length: 100 }).notNull(),
});

export const mysqlOrders = mysqlTable('orders', {
  id: mysqlSerial('id').primaryKey(),
  customer: int('customer').notNull(),
  note: mysqlVarchar('note', { length: 100 }).notNull(),
});

/** The same table on every target (`serial` is PostgreSQL's and MySQL's/MariaDB's). */
export const CREATE_ORDERS =
  'create table orders (id serial primary key, customer int not null, note varchar(100) not null)';

/**
 * A cluster of the target and a Tidemark router over it, with the conformance suite's adapter
 * for the target (replica ids are the node names). Round robin, so reads without a token use
 * both replicas.
 */
export async function clusterAndRouter(
  target: string,
): Promise<{ cluster: Cluster; router: Router<unknown, unknown> }> {
  const conformance = await loadTarget(target);
  const cluster = await conformance.startCluster();
  const adapter = conformance.createAdapter(cluster) as Adapter<unknown, unknown>;
  const router = new Router({ adapter, cluster: 'main', selection: 'round-robin' });
  await router.ready();
  return { cluster, router };
}

/** A plain Drizzle database (its own pool) over one node, with the relational schema. */
export function pgDatabase(url: string) {
  return drizzlePg({
    client: new pg.Pool({ connectionString: url, max: 2 }),
    schema: { orders: pgOrders },
  });
}

export function mysqlDatabase(
  url: string,
): MySql2Database<{ orders: typeof mysqlOrders }> & { $client: mysql.Pool } {
  return drizzleMysql({
    client: mysql.createPool({ uri: url, connectionLimit: 2 }),
    schema: { orders: mysqlOrders },
    mode: 'default',
  });
}

export { waitForRow, waitForTable } from '@tidemark/test-clusters';
