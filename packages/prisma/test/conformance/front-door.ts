/**
 * The conformance suite's orders through Prisma: the `PrismaTidemark` driver adapter with the
 * `readReplicas({ router })` extension, and `@prisma/extension-read-replicas` over plain
 * `@prisma/adapter-pg` clients of the same nodes as the control. Its own table
 * (`conformance_orders`, model `ConformanceOrder`): the suite's ids need 64 bits.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { readReplicas as prismaReadReplicas } from '@prisma/extension-read-replicas';
import type { FrontDoor, OrderClient } from '@tidemark/conformance';
import type { Router } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { PrismaTidemark, readReplicas } from '../../src/index.js';
import { PrismaClient } from '../generated/client.js';

const CREATE_TABLE = `
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

function client(extended: unknown, clients: PrismaClient[]): OrderClient {
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

const plainClient = (url: string) =>
  new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 2 }) });

/** Prisma over node-postgres (PostgreSQL targets). */
export function prismaFrontDoor(): FrontDoor {
  return {
    name: 'prisma',
    async setup(cluster: Cluster) {
      await cluster.exec(cluster.primary().name, CREATE_TABLE);
    },
    open(router: Router<unknown, unknown>) {
      const base = new PrismaClient({ adapter: PrismaTidemark(router as never) });
      const db = base.$extends(readReplicas({ router: router as never }));
      return client(db, [base]);
    },
    openNaive(cluster: Cluster) {
      const base = plainClient(cluster.primary().url);
      const replicas = cluster.replicas().map((node) => plainClient(node.url));
      const db = base.$extends(prismaReadReplicas({ replicas: replicas as never }));
      return client(db, [base, ...replicas]);
    },
  };
}
