import type { Router, Session } from '@tidemark/core';
import { mayRunOnReplica, type SqlFlavour } from '@tidemark/core';
import { DrizzleErrorCode, TidemarkDrizzleError } from './errors.js';

/**
 * What the integration needs of a `@tidemark/core` Router over `@tidemark/pg` or
 * `@tidemark/mysql` (method syntax, so a `Router<PgPosition, pg.PoolClient>` fits).
 */
export type TidemarkRouter = Pick<Router<unknown, unknown>, 'read' | 'write'>;

/** Runs one statement on the connection the router leased. */
type Run = (connection: unknown) => Promise<unknown>;

/** Where one statement goes, given its SQL text. */
export type Route = (sql: string, run: Run) => Promise<unknown>;

/**
 * The route of the read side (`select`, `$count`, `query.*`, `with(...).select`): a replica that
 * has the session's writes, through `router.read`; a statement whose text writes or locks (a
 * write CTE, `for update`) goes through `router.write` instead, so it runs on the primary and its
 * position is captured.
 */
export function readRoute(
  router: TidemarkRouter,
  session: () => Session,
  flavour: SqlFlavour,
): Route {
  return (sql, run) =>
    mayRunOnReplica(sql, flavour)
      ? router.read(session(), run)
      : router.write(session(), run, { transaction: false });
}

/** The route of everything else: the primary, through `router.write` (autocommit, captured). */
export function writeRoute(router: TidemarkRouter, session: () => Session): Route {
  return (_sql, run) => router.write(session(), run, { transaction: false });
}

function notRoutable(what: string): TidemarkDrizzleError {
  return new TidemarkDrizzleError(
    DrizzleErrorCode.NotRoutable,
    `${what} is not supported outside a transaction: Tidemark leases a connection per statement. Run it inside db.transaction(), or on a client of your own.`,
  );
}

interface PgQueryable {
  query(config: unknown, values?: unknown): Promise<unknown>;
}

/**
 * The client a Tidemark-built `drizzle-orm/node-postgres` database runs on, in place of a
 * `pg.Pool`: each `query` is one statement, routed on its own. It offers only what Drizzle's
 * node-postgres session calls outside a transaction; it is not a pool (no `connect`), so
 * Drizzle never tries to hold one of its connections.
 */
export class RoutedPgClient {
  constructor(private readonly route: Route) {}

  query(config: string | { readonly text: string }, values?: unknown, callback?: unknown) {
    if (typeof values === 'function' || typeof callback === 'function') {
      throw notRoutable('A node-postgres query with a callback');
    }
    const text = typeof config === 'string' ? config : config?.text;
    if (typeof text !== 'string' || typeof (config as { submit?: unknown }).submit === 'function') {
      throw notRoutable('A node-postgres query without SQL text (a cursor or stream)');
    }
    return this.route(text, (connection) =>
      values === undefined
        ? (connection as PgQueryable).query(config)
        : (connection as PgQueryable).query(config, values),
    );
  }
}

interface MysqlQueryable {
  query(options: unknown, values?: unknown): Promise<unknown>;
  execute(options: unknown, values?: unknown): Promise<unknown>;
}

/**
 * The client a Tidemark-built `drizzle-orm/mysql2` database runs on, in place of a mysql2
 * promise pool: each `query` / `execute` is one statement, routed on its own. It has no
 * `getConnection`, so Drizzle does not treat it as a pool.
 */
export class RoutedMysqlClient {
  constructor(private readonly route: Route) {}

  query(options: string | { readonly sql: string }, values?: unknown) {
    return this.send('query', options, values);
  }

  execute(options: string | { readonly sql: string }, values?: unknown) {
    return this.send('execute', options, values);
  }

  /** Drizzle's mysql2 `.iterator()` streams on the callback connection: one connection, held. */
  get connection(): never {
    throw notRoutable("Drizzle's mysql2 .iterator()");
  }

  private send(
    method: 'query' | 'execute',
    options: string | { readonly sql: string },
    values: unknown,
  ) {
    if (typeof values === 'function') throw notRoutable('A mysql2 query with a callback');
    const text = typeof options === 'string' ? options : options?.sql;
    if (typeof text !== 'string') throw notRoutable('A mysql2 query without SQL text');
    return this.route(text, (connection) =>
      values === undefined
        ? (connection as MysqlQueryable)[method](options)
        : (connection as MysqlQueryable)[method](options, values),
    );
  }
}
