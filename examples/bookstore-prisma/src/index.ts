/**
 * The Bookstore's orders through Prisma, as a Prisma user writes them: a client generated from
 * prisma/schema.prisma (by this package's build), made two ways over the same servers.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { readReplicas as prismaReadReplicas } from '@prisma/extension-read-replicas';
import { PrismaTidemark, type RouterLike, readReplicas } from '@tidemark/prisma';
import { PrismaClient } from '../dist/prisma-client/client.js';

/**
 * What the Bookstore calls on either client (both are extended clients of the generated one,
 * whose exact extension types differ).
 */
export interface OrdersClient {
  readonly order: {
    create(args: {
      data: { customer: number; note: string };
      select: { id: true };
    }): PromiseLike<{ id: bigint }>;
    findMany(args: {
      where: { customer: number };
      select: { id: true };
      orderBy: Array<{ createdAt: 'desc' } | { id: 'desc' }>;
      take: number;
    }): PromiseLike<Array<{ id: bigint }>>;
  };
}

export interface Clients {
  readonly db: OrdersClient;
  close(): Promise<void>;
}

/** A client on one server, as a Prisma user sets it up. */
const plainClient = (url: string) =>
  new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 2 }) });

/** The control: Prisma's own `@prisma/extension-read-replicas` (every model read on the replica). */
export function prismaReplicas(primaryUrl: string, replicaUrl: string): Clients {
  const primary = plainClient(primaryUrl);
  const replica = plainClient(replicaUrl);
  return {
    db: primary.$extends(prismaReadReplicas({ replicas: [replica as never] })),
    close: async () => {
      await primary.$disconnect();
      await replica.$disconnect();
    },
  };
}

/** `@tidemark/prisma`: the adapter and the extension over a Tidemark router of `@tidemark/pg`. */
export function tidemarkReplicas(router: RouterLike): Clients {
  const client = new PrismaClient({ adapter: PrismaTidemark(router) });
  return {
    db: client.$extends(readReplicas({ router })),
    close: () => client.$disconnect(),
  };
}
