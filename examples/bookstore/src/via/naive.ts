import type { Strategy, StrategyRead } from '../strategies/types.js';

/**
 * The control through a tool: its own replica helper (`handle`), which sends every read to a
 * replica; `close` ends the tool's connections.
 */
export function naiveStrategy<H>(handle: H, close: () => Promise<void>): Strategy<H> {
  return {
    name: 'naive',
    write: (_customer, fn) => fn(handle),
    async read<T>(_customer: number, fn: (handle: H) => Promise<T>) {
      const value = await fn(handle);
      return { value, target: 'replica', waitedMs: undefined } satisfies StrategyRead<T>;
    },
    close,
  };
}
