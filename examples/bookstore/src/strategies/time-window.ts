import type { Database } from '../databases/types.js';
import type { Strategy, StrategyContext, StrategyRead } from './types.js';

/** Rails' default `delay` for automatic role switching. */
export const TIME_WINDOW_MS = 2000;

export const timeWindowDescription = `reads go to the primary for ${TIME_WINDOW_MS / 1000} s after the session's last write, else the replica (the Rails default)`;

/**
 * Rails-style "stick to the primary for a while after a write". Correct only while replication
 * is faster than the window; nothing checks that it is.
 */
export function createTimeWindowStrategy<C>(
  database: Database<C>,
  context: StrategyContext,
): Strategy<C> {
  const primary = database.openPool(context.primaryUrl);
  const replica = database.openPool(context.replicaUrl);
  /** Per customer: when their last write was acknowledged (performance.now()). */
  const lastWriteAt = new Map<number, number>();
  return {
    name: 'time-window',
    async write(customer, fn) {
      const value = await primary.use(fn);
      lastWriteAt.set(customer, performance.now());
      return value;
    },
    async read<T>(customer: number, fn: (connection: C) => Promise<T>) {
      const wroteAt = lastWriteAt.get(customer);
      const recent = wroteAt !== undefined && performance.now() - wroteAt < TIME_WINDOW_MS;
      const value = await (recent ? primary : replica).use(fn);
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
