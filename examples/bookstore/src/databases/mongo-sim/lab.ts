import type { Document } from 'mongodb';
import type { LabPositions, NodePool, ReplicaSample } from '../types.js';
import { appliedOpTime, opTimeToBigInt, type TimestampLike } from './optime.js';
import type { MongoDemoConnection } from './pool.js';

/**
 * Lag in whole seconds (BSON timestamps count seconds): the newest cluster time the member has
 * seen (the `$clusterTime` every reply gossips, which moves on with what it receives) minus the
 * oplog time it has applied. 0 when it has applied everything it has heard of, so an idle set
 * does not look like a lagging replica. Undefined when the reply carries no cluster time.
 */
export function labLagSeconds(hello: Document): number | undefined {
  const clusterTime = hello['$clusterTime']?.clusterTime as TimestampLike | undefined;
  if (clusterTime === undefined) return undefined;
  return Math.max(0, clusterTime.t - appliedOpTime(hello).t);
}

async function hello(connection: MongoDemoConnection): Promise<Document> {
  return connection.client.db('admin').command({ hello: 1 });
}

/** The lab router on MongoDB: oplog times from `hello`, as bigints. */
export const mongoLab: LabPositions<MongoDemoConnection, bigint> = {
  rule: "its applied optime (hello's lastWrite.opTime) >= the session's last write optime",
  async afterWrite(connection) {
    // The primary's newest optime right after the acknowledged insert: with one writer at a time
    // it is the insert's own (as the insert LSN is on PostgreSQL).
    return opTimeToBigInt(appliedOpTime(await hello(connection)));
  },
  sample: (replica: NodePool<MongoDemoConnection>) =>
    replica.use(async (connection): Promise<ReplicaSample<bigint>> => {
      const reply = await hello(connection);
      return { applied: opTimeToBigInt(appliedOpTime(reply)), lagSeconds: labLagSeconds(reply) };
    }),
  covers: (applied, required) => applied >= required,
};
