import { PrismaMariaDb, type PrismaMariadbOptions } from '@prisma/adapter-mariadb';
import type {
  ConnectionInfo,
  IsolationLevel,
  SqlDriverAdapter,
  SqlDriverAdapterFactory,
  SqlQuery,
  SqlResultSet,
  Transaction,
} from '@prisma/driver-adapter-utils';
import { ConfigError, maybeCurrentSession, Session } from '@tidemark/core';
import type { PoolConnection } from 'mysql2/promise';
import { PrismaErrorCode, TidemarkPrismaError } from './errors.js';
import { leaseForTransaction } from './lease.js';
import { type MariaDbRequest, type MariaDbResult, runAsMariaDb } from './mariadb-shape.js';
import { isRoutedRead, noteRouterError, refuseTransactionOnReplica, withCall } from './route.js';
import { type RouterOver, registerRouter } from './routers.js';

/**
 * What the adapter needs of a `@tidemark/core` Router over `@tidemark/mysql` (MySQL or MariaDB;
 * its connections are mysql2 `PoolConnection`s): method syntax, so a `Router<P, PoolConnection>`
 * fits.
 */
export interface MysqlRouterLike extends RouterOver<PoolConnection> {}

/**
 * The options of `@prisma/adapter-mariadb` that apply here: `database` (the schema name Prisma
 * reports) and `useTextProtocol` (mysql2's `query` instead of its prepared `execute`).
 */
export type MariaDbOptions = Pick<PrismaMariadbOptions, 'database' | 'useTextProtocol'>;

export interface PrismaTidemarkMariaDbOptions {
  /**
   * The session of the statement being run. Default: the request's session (`currentSession()`
   * under the `@tidemark/http` middleware or `runWithSession`), else one session shared by every
   * statement of this adapter outside a request.
   */
  session?: () => Session;
  /** Passed to `@prisma/adapter-mariadb`. */
  mariadb?: MariaDbOptions;
}

type Protocol = 'query' | 'execute';

/**
 * A `mariadb` pool as `@prisma/adapter-mariadb` uses one (`query`, `execute`, `getConnection`,
 * `end`) that owns no connection: statements run on connections the router leased, so Prisma's
 * own type mapping, argument conversion and error mapping run unchanged.
 */
class RoutedMariaDbPool {
  constructor(
    private readonly run: (
      protocol: Protocol,
      request: MariaDbRequest,
      values?: readonly unknown[],
    ) => Promise<MariaDbResult>,
    readonly getConnection: () => Promise<LeasedMariaDbConnection>,
  ) {}

  query(request: MariaDbRequest, values?: readonly unknown[]): Promise<MariaDbResult> {
    return this.run('query', request, values);
  }

  execute(request: MariaDbRequest, values?: readonly unknown[]): Promise<MariaDbResult> {
    return this.run('execute', request, values);
  }

  async end(): Promise<void> {}
}

/**
 * A `mariadb` connection over one leased primary connection, for one Prisma transaction:
 * `release()` ends the lease and resolves once the router has put the commit's position into the
 * session, so Prisma's `commit()` (which awaits it) returns only then.
 */
interface LeasedMariaDbConnection {
  query(request: MariaDbRequest, values?: readonly unknown[]): Promise<MariaDbResult>;
  execute(request: MariaDbRequest, values?: readonly unknown[]): Promise<MariaDbResult>;
  on(event: string, listener: unknown): LeasedMariaDbConnection;
  off(event: string, listener: unknown): LeasedMariaDbConnection;
  release(): Promise<void>;
}

function toRequest(request: MariaDbRequest | string): MariaDbRequest {
  return typeof request === 'string' ? { sql: request } : request;
}

/**
 * A Prisma driver adapter factory over a Tidemark router on MySQL or MariaDB (`new
 * PrismaClient({ adapter: PrismaTidemark(router) })` with the schema's provider `mysql`), built on
 * `@prisma/adapter-mariadb`: statements Prisma sends to read (a `select` from `queryRaw`, outside
 * a transaction, without writes or locks) run through `router.read` with the request's session,
 * on a replica that has the session's writes; everything else (`create`, `update`, `upsert`,
 * `executeRaw`, every statement of a `$transaction`) runs on the primary through
 * `router.write`, and its position goes into the session. Use it with the `readReplicas`
 * extension to keep raw queries on the primary and to get `$primary()` / `$replica()`.
 */
export function PrismaTidemark(
  router: MysqlRouterLike,
  options: PrismaTidemarkMariaDbOptions = {},
): SqlDriverAdapterFactory {
  if (!router || typeof router.read !== 'function' || typeof router.write !== 'function') {
    throw new ConfigError(
      'PrismaTidemark (@tidemark/prisma/mariadb) needs a @tidemark/core Router over @tidemark/mysql as its first argument.',
    );
  }
  if (options.session !== undefined && typeof options.session !== 'function') {
    throw new ConfigError('PrismaTidemark session must be a function returning a Session.');
  }
  registerRouter(router);
  const fallback = new Session();
  const session = options.session ?? (() => maybeCurrentSession() ?? fallback);

  const pool = new RoutedMariaDbPool(
    (protocol, request, values) => {
      const run = (connection: PoolConnection) =>
        runAsMariaDb(connection, protocol, request, values);
      const routed = isRoutedRead(request.sql, 'mysql')
        ? router.read(session(), run)
        : router.write(session(), run, { transaction: false });
      return routed.catch((error: unknown) => {
        noteRouterError(error);
        throw error;
      });
    },
    async () => {
      const lease = await leaseForTransaction(router, session());
      const on = (protocol: Protocol) => (request: MariaDbRequest, values?: readonly unknown[]) =>
        runAsMariaDb(lease.connection, protocol, toRequest(request), values);
      const connection: LeasedMariaDbConnection = {
        query: on('query'),
        execute: on('execute'),
        on: () => connection,
        off: () => connection,
        release: async () => {
          lease.release();
          await lease.done;
        },
      };
      return connection;
    },
  );
  const inner = new PrismaMariaDb(pool as never, {
    ...options.mariadb,
    disposeExternalPool: false,
  });
  return {
    provider: 'mysql',
    adapterName: '@tidemark/prisma',
    async connect() {
      const adapter = (await inner.connect()) as SqlDriverAdapter & {
        underlyingDriver?: () => unknown;
      };
      if (typeof adapter.underlyingDriver !== 'function' || adapter.underlyingDriver() !== pool) {
        await adapter.dispose();
        throw new TidemarkPrismaError(
          PrismaErrorCode.PrismaInternals,
          '@prisma/adapter-mariadb did not take the routed pool as its pool, so statements cannot be routed.',
        );
      }
      return new RoutedMariaDbAdapter(adapter);
    },
  };
}

/** The adapter Prisma talks to: marks which adapter call each statement comes from. */
class RoutedMariaDbAdapter implements SqlDriverAdapter {
  readonly provider = 'mysql' as const;
  readonly adapterName = '@tidemark/prisma';

  constructor(private readonly inner: SqlDriverAdapter) {}

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
    return this.inner.getConnectionInfo?.() ?? { supportsRelationJoins: false };
  }

  dispose(): Promise<void> {
    return this.inner.dispose();
  }

  async startTransaction(isolationLevel?: IsolationLevel): Promise<Transaction> {
    refuseTransactionOnReplica();
    return this.inner.startTransaction(isolationLevel);
  }
}
