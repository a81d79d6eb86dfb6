import { TidemarkDialect } from '@tidemark/kysely';
import {
  type Dialect,
  type Generated,
  Kysely,
  MysqlDialect,
  PostgresDialect,
  type Selectable,
} from 'kysely';
import { KyselyReplicationDialect } from 'kysely-replication';
import { RoundRobinReplicaStrategy } from 'kysely-replication/strategy/round-robin';
import mysql from 'mysql2';
import pg from 'pg';
import type { DbName, OrderQueries } from '../databases/types.js';
import { LIST_LENGTH } from '../ledger.js';
import { lastDecisionTarget } from './decisions.js';
import { naiveStrategy } from './naive.js';
import type { ViaInput, ViaRun, ViaStrategyName, ViaTexts } from './types.js';

/** The demo's table, schema-qualified as the raw SQL has it. */
interface BookstoreDb {
  'tidemark_bookstore.orders': {
    id: Generated<string | number>;
    customer: number;
    created_at: Generated<Date>;
    note: string;
  };
}
const ORDERS = 'tidemark_bookstore.orders';

type Db = Kysely<BookstoreDb>;

export const kyselyTexts: ViaTexts = {
  naive:
    'Kysely with kysely-replication (KyselyReplicationDialect, round robin): selects on the replica',
  tidemark:
    'Kysely with @tidemark/kysely (TidemarkDialect over the same router as tidemark): selects routed by the session, writes on the primary',
};

/** The bookstore's write and read in Kysely; only the insert's returned id differs per database. */
function kyselyOrders(db: DbName): OrderQueries<Db> {
  return {
    async placeOrder(kysely, customer, note) {
      const insert = kysely.insertInto(ORDERS).values({ customer, note });
      if (db === 'pg') {
        const row = await insert.returning('id').executeTakeFirstOrThrow();
        return Number(row.id);
      }
      const result = await insert.executeTakeFirstOrThrow();
      if (!result.insertId) throw new Error('INSERT INTO orders reported no insertId');
      return Number(result.insertId);
    },
    async latestOrders(kysely, customer) {
      const rows: Array<Pick<Selectable<BookstoreDb[typeof ORDERS]>, 'id'>> = await kysely
        .selectFrom(ORDERS)
        .select('id')
        .where('customer', '=', customer)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(LIST_LENGTH)
        .execute();
      return rows.map((row) => Number(row.id));
    },
  };
}

/** A plain Kysely dialect on one server, as a Kysely user sets it up. */
function plainDialect(db: DbName, url: string): Dialect {
  if (db === 'pg') {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    return new PostgresDialect({ pool });
  }
  // mysql2's Pool is what Kysely documents; its typings and Kysely's MysqlPool disagree on
  // the callback signatures only (a known mismatch), hence the cast.
  return new MysqlDialect({ pool: mysql.createPool({ uri: url, connectionLimit: 2 }) as never });
}

export async function createKyselyRun<C>(
  name: ViaStrategyName,
  input: ViaInput<C>,
): Promise<ViaRun<Db>> {
  const db = input.database.name;
  const queries = kyselyOrders(db);
  if (name === 'naive') {
    const kysely = new Kysely<BookstoreDb>({
      dialect: new KyselyReplicationDialect({
        primaryDialect: plainDialect(db, input.context.primaryUrl),
        replicaDialects: [plainDialect(db, input.context.replicaUrl)],
        replicaStrategy: new RoundRobinReplicaStrategy({}),
      }),
    });
    // kysely-replication sends every select to a replica.
    const strategy = naiveStrategy<Db>(kysely, () => kysely.destroy());
    return { strategy, queries };
  }
  const strategy = await input.database.createTidemarkStrategy<Db>(
    input.context,
    input.settings,
    (router) => {
      const kysely = new Kysely<BookstoreDb>({
        dialect: new TidemarkDialect({ router, database: db === 'pg' ? 'postgres' : 'mysql' }),
      });
      return {
        ...lastDecisionTarget(router, kysely),
        close: () => kysely.destroy(),
      };
    },
  );
  return { strategy, queries };
}
