import type { Adapter } from '@tidemark/core/adapter';
import type { Cluster } from '@tidemark/test-clusters';
import type { PoolConnection } from 'mysql2/promise';
import type pg from 'pg';
import {
  DEMO_DATABASE,
  mysqlOrders,
  RESET_ORDERS_STATEMENTS,
} from '../src/databases/mysql/orders.js';
import { smallMysqlPool } from '../src/databases/mysql/pool.js';
import { DEMO_SCHEMA, pgOrders, RESET_ORDERS_SQL } from '../src/databases/pg/orders.js';
import { smallPgPool } from '../src/databases/pg/pool.js';
import type { NodePool, OrderQueries } from '../src/databases/types.js';

/** Harness targets the benchmark runs on (`--db`). */
export const BENCH_TARGETS = ['pg18', 'pg15', 'pg19', 'mysql97', 'mariadb1011'] as const;
export type BenchTarget = (typeof BENCH_TARGETS)[number];

/** Connections per node, for the raw driver and for the adapter alike (both drivers' default). */
export const POOL_SIZE = 10;

/** Rows seeded before the point-lookup cells; lookups pick ids in 1..SEEDED_ROWS. */
export const SEEDED_ROWS = 10_000;

/** Adapter options the benchmark can turn on (`--pg-pipeline-capture`); none by default. */
export interface BenchAdapterOptions {
  /** `@tidemark/pg` only: the autocommit capture pipelined behind the statement. */
  readonly pipelineCapture?: boolean;
}

/** What the adapter counted (both adapters expose these fields of `roundTrips()`). */
export interface AdapterTrips {
  readonly writes: number;
  readonly roundTrips: number;
  readonly reads: number;
  readonly readRoundTrips: number;
}

/**
 * A Tidemark adapter as the benchmark uses it. The position type is left open: the benchmark
 * only hands positions from the adapter back to the same adapter and its router.
 */
export type BenchAdapter<C> = Adapter<unknown, C> & { roundTrips(): AdapterTrips };

/**
 * One database family for the benchmark. The workload's SQL is the Bookstore demo's own
 * (`src/databases/*`/orders.ts); only the point lookup is added here.
 */
export interface BenchDatabase<C> {
  /** The raw driver the adapter is compared with. */
  readonly driver: string;
  readonly adapterName: string;
  readonly orders: OrderQueries<C>;
  /** Statements that give the run a fresh, empty orders table (the demo's reset). */
  readonly resetStatements: readonly string[];
  /** A multi-row INSERT of `count` seed rows for customer 0 (no Bookstore customer). */
  seedSql(count: number): string;
  /** Point lookup by primary key. */
  lookup(connection: C, id: number): Promise<unknown>;
  /** A pool of the raw driver: `use` checks a connection out, runs `fn`, gives it back. */
  openPool(url: string): NodePool<C>;
  createAdapter(
    primary: string,
    replicas: Record<string, string>,
    options?: BenchAdapterOptions,
  ): Promise<BenchAdapter<C>>;
}

const PG_LOOKUP = `SELECT id, customer, note FROM ${DEMO_SCHEMA}.orders WHERE id = $1`;

const pgBench: BenchDatabase<pg.PoolClient> = {
  driver: 'node-postgres',
  adapterName: '@tidemark/pg',
  orders: pgOrders,
  resetStatements: [RESET_ORDERS_SQL],
  seedSql: (count) => seedSql(`${DEMO_SCHEMA}.orders`, count),
  async lookup(client, id) {
    return (await client.query(PG_LOOKUP, [id])).rows[0];
  },
  openPool: (url) => smallPgPool(url, POOL_SIZE),
  async createAdapter(primary, replicas, options = {}) {
    const { createPgAdapter } = await import('@tidemark/pg');
    // The options the README's quick start shows: URLs only, everything else default (unless
    // the run asked for an option).
    return createPgAdapter({
      primary,
      replicas,
      ...options,
    }) as unknown as BenchAdapter<pg.PoolClient>;
  },
};

const MYSQL_LOOKUP = `SELECT id, customer, note FROM ${DEMO_DATABASE}.orders WHERE id = ?`;

function mysqlFamilyBench(flavour: 'mysql' | 'mariadb'): BenchDatabase<PoolConnection> {
  return {
    driver: 'mysql2',
    adapterName: `@tidemark/mysql (flavour ${flavour})`,
    orders: mysqlOrders,
    resetStatements: RESET_ORDERS_STATEMENTS,
    seedSql: (count) => seedSql(`${DEMO_DATABASE}.orders`, count),
    async lookup(connection, id) {
      const [rows] = await connection.query(MYSQL_LOOKUP, [id]);
      return (rows as unknown[])[0];
    },
    openPool: (url) => smallMysqlPool(url, POOL_SIZE),
    async createAdapter(primary, replicas) {
      const { createMysqlAdapter } = await import('@tidemark/mysql');
      return createMysqlAdapter({
        flavour,
        primary,
        replicas,
      }) as unknown as BenchAdapter<PoolConnection>;
    },
  };
}

function seedSql(table: string, count: number): string {
  const rows = Array.from({ length: count }, (_, i) => `(0, 'seed ${i + 1}')`);
  return `INSERT INTO ${table} (customer, note) VALUES ${rows.join(', ')}`;
}

/**
 * Hand the target's benchmark database to `use`, generic over the connection type so that
 * connections never cross drivers (the demo's `withDatabase` pattern).
 */
export function withBenchDatabase<R>(
  target: BenchTarget,
  use: <C>(database: BenchDatabase<C>) => Promise<R>,
): Promise<R> {
  switch (target) {
    case 'pg15':
    case 'pg18':
    case 'pg19':
      return use(pgBench);
    case 'mysql97':
      return use(mysqlFamilyBench('mysql'));
    case 'mariadb1011':
      return use(mysqlFamilyBench('mariadb'));
  }
}

/** Fresh orders table on the primary plus the seed rows; the caller waits for the replicas. */
export async function resetAndSeed<C>(cluster: Cluster, database: BenchDatabase<C>): Promise<void> {
  const primary = cluster.primary().name;
  for (const statement of database.resetStatements) await cluster.exec(primary, statement);
  const batch = 1000;
  for (let done = 0; done < SEEDED_ROWS; done += batch) {
    await cluster.exec(primary, database.seedSql(Math.min(batch, SEEDED_ROWS - done)));
  }
}
