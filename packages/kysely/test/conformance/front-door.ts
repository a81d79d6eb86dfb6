/**
 * The conformance suite's orders through Kysely: `TidemarkDialect` over the router, and
 * kysely-replication (round robin over plain dialects of the same nodes) as the control. The
 * suite's `orders` table, with the bigint ids the suite chooses, on both SQL flavours.
 */
import type { FrontDoor, OrderClient } from '@tidemark/conformance';
import type { Router } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import { type Dialect, Kysely, MysqlDialect, PostgresDialect } from 'kysely';
import { KyselyReplicationDialect } from 'kysely-replication';
import { RoundRobinReplicaStrategy } from 'kysely-replication/strategy/round-robin';
import mysql from 'mysql2';
import pg from 'pg';
import { TidemarkDialect } from '../../src/index.js';

interface Database {
  // bigint columns: node-postgres returns them as text, mysql2 as numbers below 2^53.
  orders: { id: number | string; customer: number | string; note: string };
}

function client(db: Kysely<Database>): OrderClient {
  return {
    async insertOrder(order) {
      await db.insertInto('orders').values(order).execute();
    },
    async ordersOf(customer) {
      const rows = await db
        .selectFrom('orders')
        .select('id')
        .where('customer', '=', customer)
        .orderBy('id', 'desc')
        .limit(20)
        .execute();
      return rows.map((row) => Number(row.id));
    },
    close: () => db.destroy(),
  };
}

/** Kysely's own dialect for one node, on a pool of its own. */
function plainDialect(flavour: 'pg' | 'mysql', url: string): Dialect {
  return flavour === 'pg'
    ? new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) })
    : new MysqlDialect({ pool: mysql.createPool({ uri: url, connectionLimit: 2 }) as never });
}

/** Kysely over node-postgres (`pg` targets) or mysql2 (MySQL and MariaDB targets). */
export function kyselyFrontDoor(flavour: 'pg' | 'mysql'): FrontDoor {
  return {
    name: 'kysely',
    open(router: Router<unknown, unknown>) {
      const database = flavour === 'pg' ? 'postgres' : 'mysql';
      return client(new Kysely<Database>({ dialect: new TidemarkDialect({ router, database }) }));
    },
    openNaive(cluster: Cluster) {
      const [first, ...rest] = cluster.replicas().map((node) => plainDialect(flavour, node.url));
      return client(
        new Kysely<Database>({
          dialect: new KyselyReplicationDialect({
            primaryDialect: plainDialect(flavour, cluster.primary().url),
            replicaDialects: [first!, ...rest],
            replicaStrategy: new RoundRobinReplicaStrategy({}),
          }),
        }),
      );
    },
  };
}
