import type { Database } from '../databases/types.js';
import { ReplicaSampler } from './replica-sampler.js';
import type { Strategy, StrategyContext, StrategyRead } from './types.js';

export const LAB_MAX_LAG_SECONDS = 2;
export const LAB_SAMPLE_INTERVAL_MS = 200;

/** Header line; `rule` is the database's position test, e.g. "its replay LSN >= ...". */
export function labRouterDescription(rule: string): string {
  return `replica if its lag < ${LAB_MAX_LAG_SECONDS} s and ${rule}, from a monitor sample every ${LAB_SAMPLE_INTERVAL_MS} ms (no wait), else the primary`;
}

/**
 * The lab's router: correct (it compares positions), but it decides from the last monitor sample
 * and never waits, so a read right after a write usually finds the sample older than the write.
 */
export async function createLabRouterStrategy<C>(
  database: Database<C>,
  context: StrategyContext,
): Promise<Strategy<C>> {
  const { lab } = database;
  const primary = database.openPool(context.primaryUrl);
  const replica = database.openPool(context.replicaUrl);
  const sampler = new ReplicaSampler(() => lab.sample(replica), LAB_SAMPLE_INTERVAL_MS);
  await sampler.start();
  /** Per customer: the position of their last acknowledged write. */
  const lastWrite = new Map<number, unknown>();

  function replicaCanServe(customer: number): boolean {
    const sample = sampler.current();
    // Unknown lag (MariaDB reports NULL while its SQL thread is stopped) is not "under 2 s".
    if (!sample || sample.lagSeconds === undefined || sample.lagSeconds >= LAB_MAX_LAG_SECONDS) {
      return false;
    }
    if (!lastWrite.has(customer)) return true;
    return lab.covers(sample.applied, lastWrite.get(customer));
  }

  return {
    name: 'lab-router',
    write: (customer, fn) =>
      primary.use(async (connection) => {
        const value = await fn(connection);
        // Autocommit: the write is committed once it returns. Read the position on the same
        // connection, after the commit.
        lastWrite.set(customer, await lab.afterWrite(connection));
        return value;
      }),
    async read<T>(customer: number, fn: (connection: C) => Promise<T>) {
      const onReplica = replicaCanServe(customer);
      const value = await (onReplica ? replica : primary).use(fn);
      return {
        value,
        target: onReplica ? 'replica' : 'primary',
        waitedMs: undefined,
      } satisfies StrategyRead<T>;
    },
    async close() {
      await sampler.stop();
      await Promise.all([primary.end(), replica.end()]);
    },
  };
}
