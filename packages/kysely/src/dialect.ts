import { ConfigError, maybeCurrentSession, Session } from '@tidemark/core';
import {
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  MysqlAdapter,
  MysqlIntrospector,
  MysqlQueryCompiler,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryCompiler,
  type TransactionSettings,
} from 'kysely';
import { RoutedDriver, type RouterLike, type Statements } from './driver.js';
import { type Execute, executeMysql, executePg } from './results.js';

export interface TidemarkDialectOptions {
  /**
   * The Tidemark router of this database (`new Router({ adapter: createPgAdapter(...) })` or
   * `createMysqlAdapter(...)`). Reads go to its replicas, everything else to its primary.
   */
  router: RouterLike;
  /** The database: `postgres` (node-postgres) or `mysql` (mysql2; MySQL and MariaDB). */
  database: 'postgres' | 'mysql';
  /**
   * The session of the query being run. Default: the request's session (`currentSession()` under
   * the `@tidemark/http` middleware or `runWithSession`), else one session shared by every query
   * of this Kysely instance outside a request (scripts, jobs): never stale, but every such read
   * then needs the newest write of any of them.
   */
  session?: () => Session;
  /** Close the router when `db.destroy()` runs. Default false: the router is yours. */
  closeRouter?: boolean;
}

const PG_STATEMENTS: Statements = {
  begin: (settings) => {
    const parts = [
      ...(settings.isolationLevel ? [`isolation level ${settings.isolationLevel}`] : []),
      ...(settings.accessMode ? [settings.accessMode] : []),
    ];
    return [parts.length > 0 ? `start transaction ${parts.join(' ')}` : 'begin'];
  },
  quote: (name) => `"${name.replaceAll('"', '""')}"`,
};

const MYSQL_STATEMENTS: Statements = {
  begin: (settings) => {
    const parts = [
      ...(settings.isolationLevel ? [`isolation level ${settings.isolationLevel}`] : []),
      ...(settings.accessMode ? [settings.accessMode] : []),
    ];
    // MySQL: `set transaction` applies to the next transaction of the session only.
    return [...(parts.length > 0 ? [`set transaction ${parts.join(', ')}`] : []), 'begin'];
  },
  quote: (name) => `\`${name.replaceAll('`', '``')}\``,
};

/**
 * A Kysely dialect over a Tidemark router: `selectFrom(...)` runs on a replica that has the
 * session's writes (or waits, or falls back to the primary, by the router's policy);
 * `insertInto/updateTable/deleteFrom/mergeInto`, raw SQL, locking selects, selects with a
 * data-modifying `with`, and everything inside `db.transaction()` run on the primary, and their
 * positions go into the session. Query code does not change.
 *
 * ```ts
 * const db = new Kysely<DB>({ dialect: new TidemarkDialect({ router, database: 'postgres' }) });
 * ```
 */
export class TidemarkDialect implements Dialect {
  private readonly execute: Execute;
  private readonly statements: Statements;
  private readonly fallbackSession = new Session();

  constructor(private readonly options: TidemarkDialectOptions) {
    if (!options || typeof options.router?.read !== 'function') {
      throw new ConfigError('TidemarkDialect needs { router }: a @tidemark/core Router.');
    }
    if (options.database === 'postgres') {
      this.execute = executePg;
      this.statements = PG_STATEMENTS;
    } else if (options.database === 'mysql') {
      this.execute = executeMysql;
      this.statements = MYSQL_STATEMENTS;
    } else {
      throw new ConfigError(
        `TidemarkDialect database must be 'postgres' or 'mysql', got ${JSON.stringify(options.database)}.`,
      );
    }
    if (options.session !== undefined && typeof options.session !== 'function') {
      throw new ConfigError('TidemarkDialect session must be a function returning a Session.');
    }
  }

  createDriver(): Driver {
    const custom = this.options.session;
    return new RoutedDriver({
      router: this.options.router,
      execute: this.execute,
      statements: this.statements,
      session: custom ?? (() => maybeCurrentSession() ?? this.fallbackSession),
      closeRouter: this.options.closeRouter ?? false,
    });
  }

  createQueryCompiler(): QueryCompiler {
    return this.options.database === 'postgres'
      ? new PostgresQueryCompiler()
      : new MysqlQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return this.options.database === 'postgres' ? new PostgresAdapter() : new MysqlAdapter();
  }

  // biome-ignore lint/suspicious/noExplicitAny: Kysely's own Dialect signature
  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return this.options.database === 'postgres'
      ? new PostgresIntrospector(db)
      : new MysqlIntrospector(db);
  }
}

export type { TransactionSettings };
