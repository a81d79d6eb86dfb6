import type { Pool, PoolConnection } from 'mysql2/promise';
import {
  type ConnectionTap,
  type OkPacket,
  SERVER_STATUS_AUTOCOMMIT,
  SERVER_STATUS_IN_TRANS,
  type TripCounter,
  tapConnection,
} from './connection-tap.js';
import type { SessionSetup } from './session-setup.js';

export interface LeaseOptions {
  /** Aborting destroys the connection: the only way to stop a running statement here. */
  readonly signal?: AbortSignal | undefined;
  /** Count this lease's commands here. */
  readonly counter?: TripCounter | undefined;
  /** Receives every OK packet of this lease. */
  readonly onOk?: ((ok: OkPacket) => void) | undefined;
  /** The pool's per-connection setup, awaited before the connection is used. */
  readonly setup?: SessionSetup | undefined;
  /** Turns a setup failure into the error to throw (default: the driver's error as is). */
  readonly explainSetupFailure?: ((error: unknown) => unknown) | undefined;
  /**
   * Called with the server thread id when the lease is aborted, to stop the statement on the
   * server too (KILL QUERY from another connection); closing the socket alone does not.
   */
  readonly cancel?: ((threadId: number) => void) | undefined;
}

/** What a lease knows about its connection's session. */
export interface Lease {
  /**
   * From the latest OK packet: true inside a transaction, false outside, undefined when no OK
   * packet came during this lease (only result sets, whose EOF packets the driver does not expose).
   */
  inTransaction(): boolean | undefined;
}

/**
 * Check a connection out of `pool`, run `work` on it and give it back, or destroy it when it may
 * be unusable or carry state into the next lease: a connection-level error, an abort, or a
 * session left inside a transaction or with autocommit off.
 */
export async function withConnection<T>(
  pool: Pool,
  options: LeaseOptions,
  work: (connection: PoolConnection, lease: Lease) => Promise<T>,
): Promise<T> {
  const { signal } = options;
  signal?.throwIfAborted();
  const connection = await pool.getConnection();
  let tap: ConnectionTap;
  try {
    tap = tapConnection(connection.connection);
    if (options.setup) await options.setup.ready(connection.connection);
  } catch (error) {
    connection.destroy();
    throw options.explainSetupFailure ? options.explainSetupFailure(error) : error;
  }
  // Each lease starts from a clean slate: the previous one left the session outside a transaction.
  tap.fatal = undefined;
  tap.lastStatus = undefined;
  tap.counter = options.counter;
  tap.onOk = options.onOk;
  let aborted = false;
  let rejectAborted: (reason: unknown) => void = () => undefined;
  const abortedPromise = new Promise<never>((_, reject) => {
    rejectAborted = reject;
  });
  const onAbort = () => {
    aborted = true;
    // mysql2's destroy() only half-closes the socket and never fails the running command, so
    // the lease stops waiting for it here and closes the socket for real.
    const threadId = connection.threadId;
    destroyHard(connection);
    if (typeof threadId === 'number') options.cancel?.(threadId);
    rejectAborted(signal?.reason);
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  const lease: Lease = {
    inTransaction: () =>
      tap.lastStatus === undefined ? undefined : (tap.lastStatus & SERVER_STATUS_IN_TRANS) !== 0,
  };
  try {
    const running = work(connection, lease);
    if (!signal) return await running;
    // What the work does after an abort no longer matters; its failure must not go unhandled.
    running.catch(() => undefined);
    return await Promise.race([running, abortedPromise]);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    tap.counter = undefined;
    tap.onOk = undefined;
    if (aborted) {
      // Already destroyed.
    } else if (tap.fatal !== undefined || carriesState(tap.lastStatus)) {
      connection.destroy();
    } else {
      connection.release();
    }
  }
}

function destroyHard(connection: PoolConnection): void {
  connection.destroy();
  (connection.connection as unknown as { stream?: { destroy?: () => void } }).stream?.destroy?.();
}

/** A session inside a transaction or with autocommit off must not reach the next user. */
function carriesState(status: number | undefined): boolean {
  if (status === undefined) return false;
  return (status & SERVER_STATUS_IN_TRANS) !== 0 || (status & SERVER_STATUS_AUTOCOMMIT) === 0;
}
