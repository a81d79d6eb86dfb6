import type { Database } from '../databases/types.js';
import type { Strategy, StrategyContext, StrategyRead } from './types.js';

export const naiveDescription = 'every read from the replica';

/** The control: no session state at all, every read goes to the replica. */
export function createNaiveStrategy<C>(
  database: Database<C>,
  context: StrategyContext,
): Strategy<C> {
  const primary = database.openPool(context.primaryUrl);
  const replica = database.openPool(context.replicaUrl);
  return {
    name: 'naive',
    write: (_customer, fn) => primary.use(fn),
    async read<T>(_customer: number, fn: (connection: C) => Promise<T>) {
      const value = await replica.use(fn);
      return { value, target: 'replica', waitedMs: undefined } satisfies StrategyRead<T>;
    },
    async close() {
      await Promise.all([primary.end(), replica.end()]);
    },
  };
}
