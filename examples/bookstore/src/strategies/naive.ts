import type pg from 'pg';
import { smallPool, withClient } from './pools.js';
import type { Strategy, StrategyContext, StrategyRead } from './types.js';

export const naiveDescription = 'every read from the replica';

/** The control: no session state at all, every read goes to the replica. */
export function createNaiveStrategy(context: StrategyContext): Strategy {
  const primary = smallPool(context.primaryUrl);
  const replica = smallPool(context.replicaUrl);
  return {
    name: 'naive',
    write: (_customer, fn) => withClient(primary, fn),
    async read<T>(_customer: number, fn: (client: pg.PoolClient) => Promise<T>) {
      const value = await withClient(replica, fn);
      return { value, target: 'replica', waitedMs: undefined } satisfies StrategyRead<T>;
    },
    async close() {
      await Promise.all([primary.end(), replica.end()]);
    },
  };
}
