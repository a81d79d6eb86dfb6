import type { Pool } from 'mysql2/promise';
import { type TripCounter, tapConnection } from './connection-tap.js';

/** The callback-API connection mysql2's pool hands to its 'connection' listeners. */
interface CoreConnection {
  query(sql: string, callback: (error: unknown) => void): unknown;
}

/**
 * One statement run once on every new connection of a pool, before anything else is sent on it
 * (pool 'connection' listeners run before the connection is handed out, and mysql2 runs commands
 * in order). So the setting costs one round trip per connection, not per operation.
 *
 * A lease must call {@link SessionSetup.ready} before using a connection: had the statement failed,
 * the connection would otherwise run in the wrong mode (a read that could write).
 */
export class SessionSetup {
  private readonly pending = new WeakMap<object, Promise<void>>();

  /**
   * @param sql the setup statement
   * @param counter counts the connections set up (`operations`) and their round trips
   */
  constructor(
    readonly sql: string,
    private readonly counter: TripCounter,
  ) {}

  /** Run the statement on every connection `pool` creates from now on. */
  attach(pool: Pool): void {
    // The promise pool forwards the event with the callback-API connection.
    pool.on('connection', (connection: unknown) => this.run(connection as CoreConnection));
  }

  /** Resolves once `connection` (callback-API object) is set up; rejects with the setup error. */
  ready(connection: object): Promise<void> {
    const pending = this.pending.get(connection);
    if (pending) return pending;
    // Created before attach() or by another pool: never hand it out unconfigured.
    return Promise.reject(new Error('connection was not set up by this pool'));
  }

  private run(connection: CoreConnection): void {
    const tap = tapConnection(connection);
    this.counter.operations++;
    // Counted here, where the command is added: the count is taken synchronously.
    tap.counter = this.counter;
    const done = new Promise<void>((resolve, reject) => {
      connection.query(this.sql, (error) => (error ? reject(error) : resolve()));
    });
    tap.counter = undefined;
    done.catch(() => undefined); // observed by ready(); not an unhandled rejection meanwhile
    this.pending.set(connection, done);
  }
}
