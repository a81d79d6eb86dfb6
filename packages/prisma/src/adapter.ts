import { PrismaPg } from '@prisma/adapter-pg';
import type {
  ConnectionInfo,
  IsolationLevel,
  SqlDriverAdapter,
  SqlDriverAdapterFactory,
  SqlQuery,
  SqlResultSet,
  Transaction,
  TransactionOptions,
} from '@prisma/driver-adapter-utils';
import { ConfigError, maybeCurrentSession, Session } from '@tidemark/core';
import pg from 'pg';
import { PrismaErrorCode, TidemarkPrismaError } from './errors.js';
import { leaseForTransaction } from './lease.js';
import { isRoutedRead, noteRouterError, refuseTransactionOnReplica, withCall } from './route.js';
import { type RouterOver, registerRouter } from './routers.js';

/**
 * What the adapter needs of a `@tidemark/core` Router over `@tidemark/pg` (its connections are
 * `pg.PoolClient`s): method syntax, so a `Router<P, pg.PoolClient>` fits.
 */
export interface RouterLike extends RouterOver<pg.PoolClient> {}

/** The options of `@prisma/adapter-pg` that apply here (`schema`, `userDefinedTypeParser`, ...). */
export type PgOptions = NonNullable<ConstructorParameters<typeof PrismaPg>[1]>;

export interface PrismaTidemarkOptions {
  /**
   * The session of the statement being run. Default: the request's session (`currentSession()`
   * under the `@tidemark/http` middleware or `runWithSession`), else one session shared by every
   * statement of this adapter outside a request (scripts, jobs): never stale, but every such read
   * then needs the newest write of any of them.
   */
  session?: () => Session;
  /** Passed to `@prisma/adapter-pg` (`schema`, `statementNameGenerator`, ...). */
  pg?: PgOptions;
}

/** A node-postgres query as `@prisma/adapter-pg` sends it: a config object or a script line. */
type PgQuery = string | { readonly text: string };

/** What `@prisma/adapter-pg` asks of a pool: `query`, `connect`, events, `end`. */
interface Facade {
  query(query: PgQuery): Promise<unknown>;
  connect(): Promise<unknown>;
}

/**
 * A `pg.Pool` that owns no connection: `@prisma/adapter-pg` accepts only a `pg.Pool` instance and
 * runs every statement through `query` (outside transactions) or `connect` (a transaction), so a
 * subclass lets Prisma's own type mapping, argument conversion and error mapping run unchanged on
 * connections the router leased.
 */
class FacadePool extends pg.Pool {
  constructor(private readonly facade: Facade) {
    super({ max: 1 });
  }

  // biome-ignore lint/suspicious/noExplicitAny: pg.Pool's overloaded signature
  override query(query: any): any {
    return this.facade.query(query as PgQuery);
  }

  // biome-ignore lint/suspicious/noExplicitAny: as above
  override connect(): any {
    return this.facade.connect();
  }

  override async end(): Promise<void> {}
}

/** `@prisma/adapter-pg`'s adapter over `pool`, checked to really run on it. */
async function pgAdapterOver(pool: FacadePool, options: PgOptions | undefined) {
  const adapter = (await new PrismaPg(pool, options).connect()) as SqlDriverAdapter & {
    underlyingDriver?: () => unknown;
  };
  if (typeof adapter.underlyingDriver !== 'function' || adapter.underlyingDriver() !== pool) {
    // PrismaPg took the pool for a config object (another copy of `pg`) and would open its own
    // connections, which no router would see.
    await adapter.dispose();
    throw new TidemarkPrismaError(
      PrismaErrorCode.PrismaInternals,
      '@prisma/adapter-pg did not accept the routed pool (is it using another copy of `pg`? install one `pg` for both, e.g. with a pnpm override), so statements cannot be routed.',
    );
  }
  return adapter;
}

function textOf(query: PgQuery): string {
  return typeof query === 'string' ? query : query.text;
}

/**
 * A Prisma driver adapter factory over a Tidemark router (`new PrismaClient({ adapter:
 * PrismaTidemark(router) })`): statements Prisma sends to read (`findMany`, `findFirst`,
 * `count`, ...: a `select` from `queryRaw`, outside a transaction, without writes, locks or
 * sequence calls) run through `router.read` with the request's session, on a replica that has
 * the session's writes; everything else (`create`, `update`, `upsert`, `executeRaw`, every
 * statement of a `$transaction`) runs on the primary through `router.write`, and its position
 * goes into the session. Use it with the {@link readReplicas} extension to keep raw queries on the
 * primary and to get `$primary()` / `$replica()`.
 */
export function PrismaTidemark(
  router: RouterLike,
  options: PrismaTidemarkOptions = {},
): SqlDriverAdapterFactory {
  if (!router || typeof router.read !== 'function' || typeof router.write !== 'function') {
    throw new ConfigError(
      'PrismaTidemark needs a @tidemark/core Router over @tidemark/pg as its first argument.',
    );
  }
  if (options.session !== undefined && typeof options.session !== 'function') {
    throw new ConfigError('PrismaTidemark session must be a function returning a Session.');
  }
  registerRouter(router);
  const fallback = new Session();
  const session = options.session ?? (() => maybeCurrentSession() ?? fallback);
  return {
    provider: 'postgres',
    adapterName: '@tidemark/prisma',
    async connect() {
      const pool = new FacadePool({
        query: (query) => {
          const run = (connection: pg.PoolClient) => connection.query(query as pg.QueryConfig);
          const routed = isRoutedRead(textOf(query), 'postgres')
            ? router.read(session(), run)
            : router.write(session(), run, { transaction: false });
          return routed.catch((error: unknown) => {
            noteRouterError(error);
            throw error;
          });
        },
        connect: () =>
          Promise.reject(
            new TidemarkPrismaError(
              PrismaErrorCode.PrismaInternals,
              'A transaction reached the routed pool instead of the router lease.',
            ),
          ),
      });
      return new RoutedAdapter(await pgAdapterOver(pool, options.pg), router, session, options.pg);
    },
  };
}

/** The adapter Prisma talks to: statements as above, transactions on one leased primary connection. */
class RoutedAdapter implements SqlDriverAdapter {
  readonly provider = 'postgres' as const;
  readonly adapterName = '@tidemark/prisma';

  constructor(
    private readonly inner: SqlDriverAdapter,
    private readonly router: RouterLike,
    private readonly session: () => Session,
    private readonly pgOptions: PgOptions | undefined,
  ) {}

  queryRaw(query: SqlQuery): Promise<SqlResultSet> {
    return withCall('query', () => this.inner.queryRaw(query));
  }

  executeRaw(query: SqlQuery): Promise<number> {
    return withCall('execute', () => this.inner.executeRaw(query));
  }

  executeScript(script: string): Promise<void> {
    return this.inner.executeScript(script);
  }

  getConnectionInfo(): ConnectionInfo {
    return this.inner.getConnectionInfo?.() ?? { supportsRelationJoins: true };
  }

  dispose(): Promise<void> {
    return this.inner.dispose();
  }

  /**
   * Lease a primary connection through `router.write` for the whole transaction and run
   * `@prisma/adapter-pg`'s own transaction on it (Prisma sends BEGIN, its statements and COMMIT);
   * the lease ends when Prisma releases the connection, and `commit()` resolves only after the
   * router has put the commit's position into the session.
   */
  async startTransaction(isolationLevel?: IsolationLevel): Promise<Transaction> {
    refuseTransactionOnReplica();
    const lease = await leaseForTransaction(this.router, this.session());
    const { connection } = lease;
    const client = {
      query: (query: PgQuery) => connection.query(query as pg.QueryConfig),
      release: (error?: unknown) => lease.release(error),
      on: () => client,
      removeListener: () => client,
    };
    try {
      const pool = new FacadePool({
        query: client.query,
        connect: async () => client,
      });
      const transaction = await (await pgAdapterOver(pool, this.pgOptions)).startTransaction(
        isolationLevel,
      );
      return new RoutedTransaction(transaction, lease.done);
    } catch (error) {
      lease.release(error instanceof Error ? error : new Error(String(error)));
      await lease.done.catch(() => undefined);
      throw error;
    }
  }
}

/** Savepoint methods of a transaction: `@prisma/driver-adapter-utils` 7.0 types only the first. */
interface Savepoints {
  createSavepoint?(name: string): Promise<void>;
  rollbackToSavepoint?(name: string): Promise<void>;
  releaseSavepoint?(name: string): Promise<void>;
}

class RoutedTransaction implements Transaction {
  readonly provider = 'postgres' as const;
  readonly adapterName = '@tidemark/prisma';
  readonly options: TransactionOptions;
  /** The savepoint methods `@prisma/adapter-pg`'s transaction has, and only those. */
  createSavepoint?: (name: string) => Promise<void>;
  rollbackToSavepoint?: (name: string) => Promise<void>;
  releaseSavepoint?: (name: string) => Promise<void>;

  constructor(
    private readonly inner: Transaction,
    private readonly done: Promise<void>,
  ) {
    this.options = inner.options;
    const savepoints = inner as Savepoints;
    for (const method of ['createSavepoint', 'rollbackToSavepoint', 'releaseSavepoint'] as const) {
      const run = savepoints[method];
      if (typeof run === 'function') this[method] = (name) => run.call(inner, name);
    }
  }

  queryRaw(query: SqlQuery): Promise<SqlResultSet> {
    return this.inner.queryRaw(query);
  }

  executeRaw(query: SqlQuery): Promise<number> {
    return this.inner.executeRaw(query);
  }

  async commit(): Promise<void> {
    await this.inner.commit();
    await this.done;
  }

  async rollback(): Promise<void> {
    await this.inner.rollback();
    await this.done;
  }
}
