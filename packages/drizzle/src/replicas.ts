import type { SqlFlavour } from '@tidemark/core';
import { ConfigError, maybeCurrentSession, Session } from '@tidemark/core';
import { entityKind } from 'drizzle-orm';
import { DrizzleErrorCode, TidemarkDrizzleError } from './errors.js';
import {
  type Route,
  RoutedMysqlClient,
  RoutedPgClient,
  readRoute,
  type TidemarkRouter,
  writeRoute,
} from './routed-client.js';

/** The third argument of `withReplicas`: where Drizzle takes `getReplica`, Tidemark takes this. */
export interface TidemarkReplicasOptions {
  /**
   * The Tidemark router of this database (`new Router({ adapter: createPgAdapter(...) })` or
   * `createMysqlAdapter(...)`). Reads go to its replicas, everything else to its primary: the
   * router's adapter holds the connections, so the replica databases passed to `withReplicas`
   * are kept as `$replicas` but not used for routing.
   */
  router: TidemarkRouter;
  /**
   * The session of the query being run. Default: the request's session (`currentSession()`
   * under the `@tidemark/http` middleware or `runWithSession`), else one session shared by every
   * query of this `withReplicas` database outside a request (scripts, jobs): never stale, but
   * every such read then needs the newest write of any of them.
   */
  session?: () => Session;
}

/** What Drizzle keeps on a database and its session, as far as rebuilding one needs. */
interface DrizzleDatabase {
  readonly constructor: new (...args: unknown[]) => DrizzleDatabase;
  readonly dialect: unknown;
  readonly session: DrizzleSession;
  readonly _: {
    readonly schema: unknown;
    readonly fullSchema: unknown;
    readonly tableNamesMap: unknown;
  };
  /** MySQL only: `default` or `planetscale` (relational queries). */
  readonly mode?: unknown;
  $client?: unknown;
  $cache?: unknown;
  transaction(fn: unknown, config?: unknown): Promise<unknown>;
  with(...queries: unknown[]): Record<string, unknown>;
  $with(...args: unknown[]): unknown;
}

interface DrizzleSession {
  readonly constructor: new (...args: unknown[]) => DrizzleSession;
  /** The driver session's options (logger, cache, and mysql2's mode). */
  readonly options?: unknown;
}

/** One SQL flavour: which Drizzle classes it accepts and what it builds. */
export interface Flavour {
  readonly sql: SqlFlavour;
  /** Entity kind of the database class (`PgDatabase`, `MySqlDatabase`). */
  readonly database: string;
  /** Entity kind of the driver session this package can route (`NodePgSession`, `MySql2Session`). */
  readonly session: string;
  /** The import the user's database must come from, for error messages. */
  readonly driverImport: string;
  /** Drizzle's own `withReplicas` of this flavour: it gives the result its shape. */
  readonly drizzleWithReplicas: (primary: never, replicas: never) => unknown;
  /** The driver client (in place of its pool) that sends each statement down `route`. */
  readonly client: (route: Route) => unknown;
}

export const PG: Omit<Flavour, 'drizzleWithReplicas'> = {
  sql: 'postgres',
  database: 'PgDatabase',
  session: 'NodePgSession',
  driverImport: 'drizzle-orm/node-postgres',
  client: (route) => new RoutedPgClient(route),
};

export const MYSQL: Omit<Flavour, 'drizzleWithReplicas'> = {
  sql: 'mysql',
  database: 'MySqlDatabase',
  session: 'MySql2Session',
  driverImport: 'drizzle-orm/mysql2',
  client: (route) => new RoutedMysqlClient(route),
};

/** The builders of `db.with(...)` that only read; the others (`insert`, `update`, `delete`) write. */
const READING_BUILDERS = new Set(['select', 'selectDistinct', 'selectDistinctOn']);

/** Whether `value`'s class, or one it extends, has Drizzle entity kind `kind`. */
function hasEntityKind(value: unknown, kind: string): boolean {
  if (value === null || typeof value !== 'object') return false;
  let cls: unknown = Object.getPrototypeOf(value)?.constructor;
  while (typeof cls === 'function') {
    if ((cls as unknown as Record<symbol, unknown>)[entityKind] === kind) return true;
    cls = Object.getPrototypeOf(cls);
  }
  return false;
}

function asDrizzleDatabase(db: unknown, flavour: Flavour, what: string): DrizzleDatabase {
  const candidate = db as DrizzleDatabase | null;
  if (
    !hasEntityKind(candidate, flavour.database) ||
    !hasEntityKind(candidate?.session, flavour.session)
  ) {
    throw new TidemarkDrizzleError(
      DrizzleErrorCode.UnsupportedDriver,
      `withReplicas needs ${what} to be a database from ${flavour.driverImport} (drizzle(...)); other drivers are not supported. Pass the database itself, not a withReplicas result.`,
    );
  }
  return candidate as DrizzleDatabase;
}

/**
 * A database like `template` (same class, dialect, schema, logger, cache, mode) whose driver
 * session runs on `client`: a routed client, or a connection the router leased.
 */
function rebuild(template: DrizzleDatabase, client: unknown): DrizzleDatabase {
  const { _: meta, dialect } = template;
  const schema =
    meta.schema === undefined
      ? undefined
      : { fullSchema: meta.fullSchema, schema: meta.schema, tableNamesMap: meta.tableNamesMap };
  const SessionClass = template.session.constructor;
  const session = new SessionClass(client, dialect, schema, template.session.options ?? {});
  const DatabaseClass = template.constructor;
  const db =
    template.mode === undefined
      ? new DatabaseClass(dialect, session, schema)
      : new DatabaseClass(dialect, session, schema, template.mode);
  db.$client = template.$client;
  db.$cache = template.$cache;
  return db;
}

function checkOptions(options: TidemarkReplicasOptions | undefined): void {
  if (typeof options === 'function') {
    throw new ConfigError(
      "withReplicas' third argument is { router } (a @tidemark/core Router), not getReplica: the router picks the replica that has the session's writes.",
    );
  }
  if (
    !options ||
    typeof options.router?.read !== 'function' ||
    typeof options.router?.write !== 'function'
  ) {
    throw new ConfigError('withReplicas needs { router }: a @tidemark/core Router.');
  }
  if (options.session !== undefined && typeof options.session !== 'function') {
    throw new ConfigError('withReplicas session must be a function returning a Session.');
  }
}

/**
 * The shared implementation of both `withReplicas`: Drizzle's own `withReplicas` over two
 * databases built like `primary`, one on a client that routes every statement through
 * `router.read` (the read side), one through `router.write` (the write side, also `$primary`).
 * Transactions lease one primary connection through `router.write` for their whole life.
 */
export function tidemarkReplicas(
  flavour: Flavour,
  primaryArg: unknown,
  replicas: unknown,
  options: TidemarkReplicasOptions,
): unknown {
  const primary = asDrizzleDatabase(primaryArg, flavour, 'the primary');
  if (!Array.isArray(replicas) || replicas.length === 0) {
    throw new ConfigError('withReplicas needs a non-empty array of replica databases.');
  }
  for (const [i, replica] of replicas.entries())
    asDrizzleDatabase(replica, flavour, `replica ${i}`);
  checkOptions(options);
  const { router } = options;
  const fallback = new Session();
  const session = options.session ?? (() => maybeCurrentSession() ?? fallback);

  const reads = rebuild(primary, flavour.client(readRoute(router, session, flavour.sql)));
  const writes = rebuild(primary, flavour.client(writeRoute(router, session)));
  Object.defineProperty(writes, 'transaction', {
    configurable: true,
    enumerable: true,
    writable: true,
    // The router leases a primary connection for the callback; Drizzle opens the transaction on
    // it (isolation level, access mode, savepoints for nested ones) and commits or rolls back;
    // the router then settles the commit's position into the session before this resolves.
    value: (fn: unknown, config?: unknown) =>
      router.write(
        session(),
        (connection) => rebuild(primary, connection).transaction(fn, config),
        { transaction: false },
      ),
  });

  const db = flavour.drizzleWithReplicas(writes as never, [reads] as never) as Record<
    string,
    unknown
  >;
  Object.defineProperty(db, '$replicas', { value: replicas, enumerable: true, writable: true });
  // Drizzle sends all of `with(...)` to a replica, `insert/update/delete` included: only the
  // reading builders go there here, and the read route still sends a write CTE to the primary.
  db['with'] = (...queries: unknown[]) => {
    const onPrimary = writes.with(...queries);
    const onReplica = reads.with(...queries);
    return Object.fromEntries(
      Object.entries(onPrimary).map(([name, builder]) => [
        name,
        READING_BUILDERS.has(name) ? onReplica[name] : builder,
      ]),
    );
  };
  // Drizzle's PostgreSQL withReplicas passes `$with` one argument; pass all of them.
  db['$with'] = (...args: unknown[]) => reads.$with(...args);
  return db;
}
