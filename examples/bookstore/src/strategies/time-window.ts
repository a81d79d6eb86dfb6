import type pg from 'pg';
import { smallPool, withClient } from './pools.js';
import type { Strategy, StrategyContext, StrategyRead } from './types.js';

/** Rails' default `delay` for automatic role switching. */
export const TIME_WINDOW_MS = 2000;

export const timeWindowDescription = `reads go to the primary for ${TIME_WINDOW_MS / 1000} s after the session's last write, else the replica (the Rails default)`;

/**
 * Rails-style "stick to the primary for a while after a write". Correct only while replication
 * is faster than the window; nothing checks that it is.
 */
export function createTimeWindowStrategy(context: StrategyContext): Strategy {
  const primary = smallPool(context.primaryUrl);
  const replica = smallPool(context.replicaUrl);
  /** Per customer: when their last write was acknowledged (performance.now()). */
  const lastWriteAt = new Map<number, number>();
  return {
    name: 'time-window',
    async write(customer, fn) {
      const value = await withClient(primary, fn);
      lastWriteAt.set(customer, performance.now());
      return value;
    },
    async read<T>(customer: number, fn: (client: pg.PoolClient) => Promise<T>) {
      const wroteAt = lastWriteAt.get(customer);
      const recent = wroteAt !== undefined && performance.now() - wroteAt < TIME_WINDOW_MS;
      const value = await withClient(recent ? primary : replica, fn);
      return {
        value,
        target: recent ? 'primary' : 'replica',
        waitedMs: undefined,
      } satisfies StrategyRead<T>;
    },
    async close() {
      await Promise.all([primary.end(), replica.end()]);
    },
  };
}
