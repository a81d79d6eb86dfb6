/**
 * The conformance suite's orders through Prisma: the `PrismaTidemark` driver adapter with the
 * `readReplicas({ router })` extension, and `@prisma/extension-read-replicas` over plain
 * `@prisma/adapter-pg` (PostgreSQL) or `@prisma/adapter-mariadb` (MySQL, MariaDB) clients of the
 * same nodes as the control. Its own table (`conformance_orders`, model `ConformanceOrder`): the
 * suite's ids need 64 bits.
 */
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaPg } from '@prisma/adapter-pg';
import { readReplicas as prismaReadReplicas } from '@prisma/extension-read-replicas';
import type { FrontDoor, OrderClient } from '@tidemark/conformance';
import type { Router } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { PrismaTidemark, readReplicas } from '../../src/index.js';
import { PrismaTidemark as PrismaTidemarkMariaDb } from '../../src/mariadb-entry.js';
import { PrismaClient } from '../generated/client.js';
import { PrismaClient as MysqlPrismaClient } from '../generated-mysql/client.js';

const CREATE_TABLE_PG = `
CREATE TABLE IF NOT EXISTS conformance_orders (
  id bigint PRIMARY KEY,
  customer bigint NOT NULL,
  note text NOT NULL
);
CREATE INDEX IF NOT EXISTS conformance_orders_by_customer ON conformance_orders (customer, id DESC);
`;

/**
 * The model calls of either extended client. Both extensions keep the model API as it is; their
 * extended types differ only in `$primary`/`$replica`, so the plain client's type stands for both.
 */
type Orders = PrismaClient['conformanceOrder'];

const CREATE_TABLE_MYSQL = `
CREATE TABLE IF NOT EXISTS conformance_orders (
  id bigint PRIMARY KEY,
  customer bigint NOT NULL,
  note text NOT NULL,
  INDEX conformance_orders_by_customer (customer, id DESC)
)`;

function client(extended: unknown, clients: Array<{ $disconnect(): Promise<void> }>): OrderClient {
  const orders = (extended as { conformanceOrder: Orders }).conformanceOrder;
  return {
    async insertOrder(order) {
      await orders.create({
        data: { id: BigInt(order.id), customer: BigInt(order.customer), note: order.note },
      });
    },
    async ordersOf(customer) {
      const rows = await orders.findMany({
        where: { customer: BigInt(customer) },
        orderBy: { id: 'desc' },
        take: 20,
        select: { id: true },
      });
      return rows.map((row) => Number(row.id));
    },
    async close() {
      await Promise.all(clients.map((c) => c.$disconnect()));
    },
  };
}

const plainPg = (url: string) =>
  new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 2 }) });
// The MySQL client's model API for this model is the PostgreSQL one's (only the provider
// differs), so the PostgreSQL client's type stands for both, as `Orders` does above.
const plainMysql = (url: string) =>
  new MysqlPrismaClient({
    adapter: new PrismaMariaDb(url.replace(/^mysql:/, 'mariadb:')),
  }) as unknown as PrismaClient;

/** Prisma over node-postgres (PostgreSQL targets) or over mysql2 (MySQL and MariaDB targets). */
export function prismaFrontDoor(target: string): FrontDoor {
  const pg = target.startsWith('pg');
  return {
    name: 'prisma',
    async setup(cluster: Cluster) {
      await cluster.exec(cluster.primary().name, pg ? CREATE_TABLE_PG : CREATE_TABLE_MYSQL);
    },
    open(router: Router<unknown, unknown>) {
      const base = pg
        ? new PrismaClient({ adapter: PrismaTidemark(router as never) })
        : (new MysqlPrismaClient({
            adapter: PrismaTidemarkMariaDb(router as never),
          }) as unknown as PrismaClient);
      const db = base.$extends(readReplicas({ router: router as never }));
      return client(db, [base]);
    },
    openNaive(cluster: Cluster) {
      const plain = pg ? plainPg : plainMysql;
      const base = plain(cluster.primary().url);
      const replicas = cluster.replicas().map((node) => plain(node.url));
      const db = base.$extends(prismaReadReplicas({ replicas: replicas as never }));
      return client(db, [base, ...replicas]);
    },
  };
}
