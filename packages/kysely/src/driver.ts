import type { Session } from '@tidemark/core';
import type {
  CompiledQuery,
  DatabaseConnection,
  Driver,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import { KyselyErrorCode, TidemarkKyselyError } from './errors.js';
import { isReplicaSafe } from './query-kind.js';
import type { Execute } from './results.js';

/**
 * What the dialect needs of a `@tidemark/core` Router (any adapter): method syntax, so a
 * `Router<P, pg.PoolClient>` or `Router<P, mysql.PoolConnection>` fits.
 */
export interface RouterLike {
  readonly cluster: string;
  // biome-ignore lint/suspicious/noExplicitAny: any adapter's connection type (pg.PoolClient, mysql2 PoolConnection)
  read<T>(session: Session, fn: (connection: any) => Promise<T>): Promise<T>;
  write<T>(
    session: Session,
    // biome-ignore lint/suspicious/noExplicitAny: as above
    fn: (connection: any) => Promise<T>,
    options?: { transaction?: boolean },
  ): Promise<T>;
  close(): Promise<void>;
}

/** SQL of the statements the driver sends itself, per database. */
export interface Statements {
  /** Statements that open a transaction with these settings, in order. */
  begin(settings: TransactionSettings): string[];
  /** An identifier quoted for this database (savepoint names). */
  quote(name: string): string;
}

/** One open transaction: the primary connection the router leased, and how it ends. */
interface OpenTransaction {
  readonly connection: unknown;
  readonly end: (outcome: 'commit' | 'rollback') => void;
  readonly done: Promise<unknown>;
}

/**
 * A Kysely connection that owns nothing: each statement outside a transaction is routed on its
 * own (reads through `router.read` with the request's session, everything else through
 * `router.write`); a transaction holds one primary connection from `beginTransaction` to its end.
 */
class RoutedConnection implements DatabaseConnection {
  transaction: OpenTransaction | undefined;

  constructor(
    private readonly router: RouterLike,
    private readonly execute: Execute,
    private readonly session: () => Session,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const { sql, parameters } = query;
    const open = this.transaction;
    if (open) return (await this.execute(open.connection, sql, parameters)) as QueryResult<R>;
    const run = (connection: unknown) => this.execute(connection, sql, parameters);
    const result = isReplicaSafe(query)
      ? await this.router.read(this.session(), run)
      : await this.router.write(this.session(), run, { transaction: false });
    return result as QueryResult<R>;
  }

  /**
   * Buffered: the routed read runs to completion on its leased connection, then the rows are
   * yielded in chunks. Use a primary connection of your own for result sets too large to buffer.
   */
  async *streamQuery<R>(
    query: CompiledQuery,
    chunkSize = 100,
  ): AsyncIterableIterator<QueryResult<R>> {
    if (!Number.isInteger(chunkSize) || chunkSize <= 0) {
      throw new TidemarkKyselyError(
        KyselyErrorCode.BadArgument,
        `chunkSize must be a positive integer, got ${String(chunkSize)}.`,
      );
    }
    const { rows } = await this.executeQuery<R>(query);
    for (let i = 0; i < rows.length; i += chunkSize) yield { rows: rows.slice(i, i + chunkSize) };
  }
}

export interface RoutedDriverOptions {
  readonly router: RouterLike;
  readonly execute: Execute;
  readonly statements: Statements;
  readonly session: () => Session;
  /** Close the router when Kysely's `destroy()` runs. */
  readonly closeRouter: boolean;
}

/** The Kysely driver behind {@link TidemarkDialect}. */
export class RoutedDriver implements Driver {
  constructor(private readonly options: RoutedDriverOptions) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new RoutedConnection(this.options.router, this.options.execute, this.options.session);
  }

  /**
   * Lease a primary connection through `router.write` for the whole transaction: the callback
   * opens it, hands the connection over, and waits for Kysely's commit or rollback; the router
   * then settles the commit's position into the session, so reads after the transaction see it.
   */
  async beginTransaction(
    connection: DatabaseConnection,
    settings: TransactionSettings,
  ): Promise<void> {
    const routed = asRouted(connection);
    if (routed.transaction) {
      throw new TidemarkKyselyError(
        KyselyErrorCode.TransactionState,
        'A transaction is already open on this connection; commit or roll it back first.',
      );
    }
    const { router, execute, statements } = this.options;
    let end!: (outcome: 'commit' | 'rollback') => void;
    const ended = new Promise<'commit' | 'rollback'>((resolve) => {
      end = resolve;
    });
    let leased!: (connection: unknown) => void;
    const ready = new Promise<unknown>((resolve) => {
      leased = resolve;
    });
    const done = router.write(
      this.options.session(),
      async (primary: unknown) => {
        for (const sql of statements.begin(settings)) await execute(primary, sql, []);
        leased(primary);
        const outcome = await ended;
        await execute(primary, outcome === 'commit' ? 'commit' : 'rollback', []);
      },
      { transaction: false },
    );
    // Opening failed (no primary, a bad isolation level): that is beginTransaction's error.
    const primary = await Promise.race([ready, done.then(() => undefined)]);
    routed.transaction = { connection: primary, end, done };
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await this.finish(connection, 'commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await this.finish(connection, 'rollback');
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await this.inTransaction(connection, `savepoint ${this.options.statements.quote(name)}`);
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await this.inTransaction(
      connection,
      `rollback to savepoint ${this.options.statements.quote(name)}`,
    );
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await this.inTransaction(
      connection,
      `release savepoint ${this.options.statements.quote(name)}`,
    );
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    if (this.options.closeRouter) await this.options.router.close();
  }

  private async finish(
    connection: DatabaseConnection,
    outcome: 'commit' | 'rollback',
  ): Promise<void> {
    const routed = asRouted(connection);
    const open = routed.transaction;
    if (!open) {
      throw new TidemarkKyselyError(
        KyselyErrorCode.TransactionState,
        `No transaction is open to ${outcome}; start one with db.transaction() or db.startTransaction().`,
      );
    }
    routed.transaction = undefined;
    open.end(outcome);
    await open.done;
  }

  private async inTransaction(connection: DatabaseConnection, sql: string): Promise<void> {
    const open = asRouted(connection).transaction;
    if (!open) {
      throw new TidemarkKyselyError(
        KyselyErrorCode.TransactionState,
        'Savepoints need an open transaction (db.startTransaction()).',
      );
    }
    await this.options.execute(open.connection, sql, []);
  }
}

function asRouted(connection: DatabaseConnection): RoutedConnection {
  if (!(connection instanceof RoutedConnection)) {
    throw new TidemarkKyselyError(
      KyselyErrorCode.ForeignConnection,
      'This connection was not made by the Tidemark dialect; do not mix drivers in one Kysely instance.',
    );
  }
  return connection;
}
