import { type Cluster, mongoReplicaSetUri, startCluster } from '@tidemark/test-clusters';
import { type Document, MongoClient } from 'mongodb';
import { DemoError, DemoErrorCode } from '../../errors.js';
import { describeError, sleep } from '../text.js';
import type { DemoCluster } from '../types.js';
import { appliedOpTime, opTimeToBigInt } from './optime.js';
import type { MongoOrderBook } from './orders.js';
import { CLIENT_OPTIONS } from './pool.js';

/** Harness target: the in-process MongoDB replica-set SIMULATOR (no mongod anywhere). */
export const SIMULATOR_TARGET = 'mongo-sim';

/**
 * Secondaries the simulator starts. The demo reads from the first one only; the second makes a
 * three-member set, so majority writes never depend on the secondary whose replay is paused.
 */
const SECONDARIES = 2;

/**
 * Start the harness's MongoDB replica-set SIMULATOR in this process: a primary and two
 * secondaries speaking the wire protocol on 127.0.0.1, replaying the primary's oplog. Pausing
 * stops replay on the secondary the demo reads from; it keeps receiving the oplog.
 */
export async function startSimulatorCluster(book: MongoOrderBook): Promise<DemoCluster> {
  let cluster: Cluster;
  try {
    cluster = await startCluster(SIMULATOR_TARGET, { replicas: SECONDARIES, provider: 'local' });
  } catch (error) {
    throw new DemoError(
      DemoErrorCode.Cluster,
      `Could not start the MongoDB replica-set simulator (${describeError(error)}). Run \`pnpm install\` so the mongodb driver is installed.`,
      { cause: error },
    );
  }
  const primary = cluster.primary();
  const replica = cluster.replicas()[0];
  const spare = cluster.replicas()[1];
  let primaryUrl: string;
  try {
    if (!replica) {
      throw new DemoError(DemoErrorCode.Cluster, 'The simulator started without a secondary.');
    }
    primaryUrl = replicaSetUri(cluster);
  } catch (error) {
    await cluster.teardown();
    throw error;
  }
  // A direct connection reaches exactly this member, secondary or not.
  const replicaUrl = `mongodb://${replica.host}:${replica.port}/?directConnection=true`;
  const control = {
    primary: new MongoClient(primaryUrl, CLIENT_OPTIONS),
    replica: new MongoClient(replicaUrl, CLIENT_OPTIONS),
  };
  const waitForReplicaCatchUp = (timeoutMs = 30_000) => catchUp(control, timeoutMs);
  const spareText = spare
    ? `, ${spare.name} ${spare.host}:${spare.port} (third member, not read from)`
    : '';
  return {
    description: `MongoDB replica-set SIMULATOR (harness target ${SIMULATOR_TARGET}, in-process, not a real mongod; reports version ${cluster.version}), primary ${primary.name} ${primary.host}:${primary.port}, replica ${replica.name} ${replica.host}:${replica.port}${spareText}`,
    primaryUrl,
    replicaUrl,
    pauseReplay: () => cluster.pauseReplay(replica.name),
    resumeReplay: () => cluster.resumeReplay(replica.name),
    resetOrders: async () => {
      book.startRun();
      await waitForReplicaCatchUp();
    },
    waitForReplicaCatchUp,
    // Nothing outlives the run: the simulator keeps its data in this process only.
    dropDemoData: async () => undefined,
    close: async () => {
      await Promise.all([control.primary.close(), control.replica.close()]);
      await cluster.teardown();
    },
  };
}

/**
 * The replica-set URI the application would use: every member's host:port, the set name, and
 * `w=majority` (which `@tidemark/mongodb` requires for writes; the baselines write with it too).
 */
export function replicaSetUri(cluster: Pick<Cluster, 'nodes' | 'primary'>): string {
  try {
    return mongoReplicaSetUri(cluster, 'majority');
  } catch (error) {
    throw new DemoError(DemoErrorCode.Cluster, `Simulator: ${describeError(error)}`, {
      cause: error,
    });
  }
}

/** Wait until the replica has applied the primary's newest oplog entry (hello's lastWrite). */
async function catchUp(
  control: { primary: MongoClient; replica: MongoClient },
  timeoutMs: number,
): Promise<void> {
  const target = opTimeToBigInt(appliedOpTime(await hello(control.primary, 'primary')));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const applied = opTimeToBigInt(appliedOpTime(await hello(control.replica, 'replica')));
    if (applied >= target) return;
    if (Date.now() > deadline) {
      throw new DemoError(
        DemoErrorCode.CatchUp,
        `The simulated secondary did not apply the primary's last write within ${timeoutMs / 1000} s. Its replay may still be paused; rerun the demo (the simulator starts fresh each time).`,
      );
    }
    await sleep(20);
  }
}

async function hello(client: MongoClient, role: 'primary' | 'replica'): Promise<Document> {
  try {
    return await client.db('admin').command({ hello: 1 });
  } catch (error) {
    throw new DemoError(
      DemoErrorCode.Cluster,
      `Could not reach the simulator's ${role} (${describeError(error)}).`,
      { cause: error },
    );
  }
}
