import { TidemarkError } from '@tidemark/core';

/** Stable codes of the errors this package throws (all `TIDEMARK_`-prefixed, like core's). */
export const DrizzleErrorCode = {
  /**
   * The database handed to `withReplicas` is not a `drizzle-orm/node-postgres` or
   * `drizzle-orm/mysql2` instance (another driver, or an object that is not a Drizzle database).
   */
  UnsupportedDriver: 'TIDEMARK_DRIZZLE_UNSUPPORTED_DRIVER',
  /**
   * A driver call that needs one connection for longer than one statement, outside a
   * transaction (mysql2 `.iterator()`), or a driver API the routed client does not offer
   * (callbacks, streams): the router leases a connection per statement.
   */
  NotRoutable: 'TIDEMARK_DRIZZLE_NOT_ROUTABLE',
} as const;

export type DrizzleErrorCode = (typeof DrizzleErrorCode)[keyof typeof DrizzleErrorCode];

/** A misuse of the Tidemark Drizzle integration; the message says what to do instead. */
export class TidemarkDrizzleError extends TidemarkError {
  declare readonly code: DrizzleErrorCode;
  constructor(code: DrizzleErrorCode, message: string) {
    super(code, message);
  }
}
