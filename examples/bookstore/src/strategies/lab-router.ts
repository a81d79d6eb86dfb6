import type pg from 'pg';
import { lsnToBigInt } from './lsn.js';
import { smallPool, withClient } from './pools.js';
import { ReplicaSampler } from './replica-sampler.js';
import type { Strategy, StrategyContext, StrategyRead } from './types.js';

export const LAB_MAX_LAG_SECONDS = 2;
export const LAB_SAMPLE_INTERVAL_MS = 200;

export const labRouterDescription = `replica if its lag < ${LAB_MAX_LAG_SECONDS} s and its replay LSN >= the session's last write LSN, from a monitor sample every ${LAB_SAMPLE_INTERVAL_MS} ms (no wait), else the primary`;

/**
 * The lab's router: correct (it compares LSNs), but it decides from the last monitor sample and
 * never waits, so a read right after a write usually finds the sample older than the write.
 */
export async function createLabRouterStrategy(context: StrategyContext): Promise<Strategy> {
  const primary = smallPool(context.primaryUrl);
  const replica = smallPool(context.replicaUrl);
  const sampler = new ReplicaSampler(replica, LAB_SAMPLE_INTERVAL_MS);
  await sampler.start();
  /** Per customer: the LSN of their last acknowledged write. */
  const lastWriteLsn = new Map<number, bigint>();

  function replicaCanServe(customer: number): boolean {
    const sample = sampler.current();
    if (!sample || sample.lagSeconds >= LAB_MAX_LAG_SECONDS) return false;
    const required = lastWriteLsn.get(customer);
    return required === undefined || sample.replayLsn >= required;
  }

  return {
    name: 'lab-router',
    write: (customer, fn) =>
      withClient(primary, async (client) => {
        const value = await fn(client);
        // Autocommit: the INSERT is committed once it returns. Read the position on the same
        // connection, after the commit; the insert position is never below the commit record.
        const result = await client.query<{ lsn: string }>(
          'SELECT pg_current_wal_insert_lsn()::text AS lsn',
        );
        lastWriteLsn.set(customer, lsnToBigInt(result.rows[0]!.lsn));
        return value;
      }),
    async read<T>(customer: number, fn: (client: pg.PoolClient) => Promise<T>) {
      const onReplica = replicaCanServe(customer);
      const value = await withClient(onReplica ? replica : primary, fn);
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
