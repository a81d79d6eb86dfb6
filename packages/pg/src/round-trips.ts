import type { TripCounter } from '@tidemark/core/adapter';
import type pg from 'pg';

export type { TripCounter };

const counting = new WeakMap<pg.PoolClient, TripCounter>();
const instrumented = new WeakSet<pg.PoolClient>();

/**
 * Make `client.query` count itself into whatever counter is attached to the client for the
 * current lease. node-postgres does not pipeline, so each call is one round trip (a
 * multi-statement text is still one message and one round trip).
 */
export function instrument(client: pg.PoolClient): void {
  if (instrumented.has(client)) return;
  instrumented.add(client);
  const original = client.query;
  const counted = function (this: pg.PoolClient, ...args: unknown[]) {
    const counter = counting.get(client);
    if (counter) counter.roundTrips++;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  };
  client.query = counted as typeof client.query;
}

/** Count this client's queries into `counter` until {@link stopCounting}. */
export function startCounting(client: pg.PoolClient, counter: TripCounter | undefined): void {
  if (counter) counting.set(client, counter);
}

export function stopCounting(client: pg.PoolClient): void {
  counting.delete(client);
}
