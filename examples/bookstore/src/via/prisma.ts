import {
  type OrdersClient,
  prismaReplicas,
  tidemarkReplicas,
} from '@tidemark/example-bookstore-prisma';
import type { OrderQueries } from '../databases/types.js';
import { LIST_LENGTH } from '../ledger.js';
import { lastDecisionTarget } from './decisions.js';
import { naiveStrategy } from './naive.js';
import type { ViaInput, ViaRun, ViaStrategyName, ViaTexts } from './types.js';

export const prismaTexts: ViaTexts = {
  naive:
    'Prisma with @prisma/extension-read-replicas (@prisma/adapter-pg clients): model reads on the replica',
  tidemark:
    'Prisma with @tidemark/prisma (PrismaTidemark adapter and readReplicas over the same router as tidemark): model reads routed by the session, writes on the primary',
};

const prismaOrders: OrderQueries<OrdersClient> = {
  async placeOrder(db, customer, note) {
    const row = await db.order.create({ data: { customer, note }, select: { id: true } });
    return Number(row.id);
  },
  async latestOrders(db, customer) {
    const rows = await db.order.findMany({
      where: { customer },
      select: { id: true },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: LIST_LENGTH,
    });
    return rows.map((row) => Number(row.id));
  },
};

/** PostgreSQL only (the option parser refuses other databases for `--via prisma`). */
export async function createPrismaRun<C>(
  name: ViaStrategyName,
  input: ViaInput<C>,
): Promise<ViaRun<OrdersClient>> {
  if (input.database.name !== 'pg') {
    throw new Error(`--via prisma runs on PostgreSQL only, not ${input.database.name}`);
  }
  if (name === 'naive') {
    const { db, close } = prismaReplicas(input.context.primaryUrl, input.context.replicaUrl);
    // @prisma/extension-read-replicas sends every model read to a replica.
    const strategy = naiveStrategy<OrdersClient>(db, close);
    return { strategy, queries: prismaOrders };
  }
  const strategy = await input.database.createTidemarkStrategy<OrdersClient>(
    input.context,
    input.settings,
    (router) => {
      const { db, close } = tidemarkReplicas(router as never);
      return { ...lastDecisionTarget(router, db), close };
    },
  );
  return { strategy, queries: prismaOrders };
}
