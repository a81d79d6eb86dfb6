import type pg from 'pg';
import { instrument, startCounting, stopCounting, type TripCounter } from './round-trips.js';

export interface LeaseOptions {
  /** Aborting closes the connection, which is the only way to stop a running query here. */
  readonly signal?: AbortSignal | undefined;
  /** Count the queries of this lease here. */
  readonly counter?: TripCounter | undefined;
}

/**
 * Check a client out of `pool`, run `work` on it and give it back, or throw it away when it may
 * be unusable: the connection reported an error, the caller aborted, or the session is left inside
 * a transaction (a pooled connection must never carry one to the next user).
 */
export async function withClient<T>(
  pool: pg.Pool,
  options: LeaseOptions,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const { signal } = options;
  signal?.throwIfAborted();
  const client = await pool.connect();
  instrument(client);
  startCounting(client, options.counter);
  let broken: unknown;
  // A checked-out client has no error listener of the pool's; without ours, a connection lost
  // between two queries would crash the process with an unhandled 'error' event.
  const onError = (error: unknown) => {
    broken ??= error;
  };
  const onAbort = () => {
    broken ??= signal?.reason;
    client.end().catch(() => undefined);
  };
  client.on('error', onError);
  signal?.addEventListener('abort', onAbort, { once: true });
  let failed = false;
  try {
    return await work(client);
  } catch (error) {
    failed = true;
    if (signal?.aborted) throw signal.reason;
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    client.off('error', onError);
    stopCounting(client);
    const idle = transactionIdle(client);
    const discard = broken !== undefined || idle === false || (failed && idle === undefined);
    client.release(discard ? true : undefined);
  }
}

/**
 * Whether the session is outside any transaction, from the last ReadyForQuery message.
 * Undefined with node-postgres versions that do not expose it (before getTransactionStatus).
 */
export function transactionIdle(client: pg.PoolClient): boolean | undefined {
  const read = (client as { getTransactionStatus?: () => string | null }).getTransactionStatus;
  if (typeof read !== 'function') return undefined;
  return read.call(client) === 'I';
}
