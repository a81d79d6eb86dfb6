// The MongoDB replica-set SIMULATOR behind the Cluster contract (target mongo-sim): what the
// conformance scenarios rely on, checked with the official driver. A simulator: this proves the
// harness's model (pause, kill, restart, promotion with rollback), not mongod.
import { MongoClient } from 'mongodb';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Cluster,
  MongoSimCluster,
  providerCapabilities,
  STAGING_CAPABILITIES,
  startCluster,
} from '../src/index.js';

const clusters: Cluster[] = [];
const clients: MongoClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(clusters.splice(0).map((cluster) => cluster.teardown()));
});

async function simulated(): Promise<MongoSimCluster> {
  const cluster = await startCluster('mongo-sim', { replicas: 2 });
  clusters.push(cluster);
  expect(cluster).toBeInstanceOf(MongoSimCluster);
  return cluster as MongoSimCluster;
}

function direct(cluster: Cluster, name: string): MongoClient {
  const node = cluster.nodes().find((n) => n.name === name)!;
  const client = new MongoClient(`mongodb://${node.host}:${node.port}/?directConnection=true`, {
    serverSelectionTimeoutMS: 1000,
  });
  clients.push(client);
  return client;
}

function replicaSet(cluster: Cluster, w: string): MongoClient {
  const hosts = cluster.nodes().map((n) => `${n.host}:${n.port}`);
  const client = new MongoClient(`mongodb://${hosts.join(',')}/?replicaSet=tidemark-sim&w=${w}`, {
    serverSelectionTimeoutMS: 2000,
  });
  clients.push(client);
  return client;
}

const idsOn = async (client: MongoClient) =>
  (await client.db('t').collection('c').find({}).toArray()).map((d) => Number(d._id)).sort();

async function eventually(check: () => Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('mongo-sim cluster (simulator)', () => {
  it('names nodes n0..n2 with replica-set URLs and says it is a simulator', async () => {
    const cluster = await simulated();
    expect(cluster.version).toContain('simulator');
    expect(cluster.primary().name).toBe('n0');
    expect(cluster.replicas().map((n) => n.name)).toEqual(['n1', 'n2']);
    expect(cluster.primary().url).toMatch(
      /^mongodb:\/\/127\.0\.0\.1:\d+\/\?replicaSet=tidemark-sim$/,
    );
    expect(Object.keys(await cluster.positions())).toEqual(['n0', 'n1', 'n2']);
    await expect(cluster.exec('n0', 'SELECT 1')).rejects.toThrow(/runs no SQL/);
  });

  it('a paused replica keeps serving its old state and catches up on resume', async () => {
    const cluster = await simulated();
    await cluster.pauseReplay('n1');
    await replicaSet(cluster, 'majority')
      .db('t')
      .collection('c')
      .insertOne({ _id: 1 as never });
    await eventually(async () => (await idsOn(direct(cluster, 'n2'))).includes(1));
    expect(await idsOn(direct(cluster, 'n1'))).toEqual([]);
    await cluster.resumeReplay('n1');
    await eventually(async () => (await idsOn(direct(cluster, 'n1'))).includes(1));
  });

  it('a killed node refuses connections and comes back with its data on start', async () => {
    const cluster = await simulated();
    await replicaSet(cluster, 'majority')
      .db('t')
      .collection('c')
      .insertOne({ _id: 2 as never });
    await eventually(async () => (await idsOn(direct(cluster, 'n2'))).includes(2));
    await cluster.kill('n2');
    expect(cluster.nodes().find((n) => n.name === 'n2')?.running).toBe(false);
    await expect(direct(cluster, 'n2').db('admin').command({ ping: 1 })).rejects.toThrow();
    await cluster.start('n2');
    expect(await idsOn(direct(cluster, 'n2'))).toEqual([2]);
  });

  it('promotion: the new primary starts a new term and a write it never received is lost everywhere', async () => {
    const cluster = await simulated();
    const writer = replicaSet(cluster, '1');
    await writer
      .db('t')
      .collection('c')
      .insertOne({ _id: 3 as never });
    await eventually(async () => (await idsOn(direct(cluster, 'n1'))).includes(3));
    await cluster.stop('n1');
    await cluster.stop('n2');
    await writer
      .db('t')
      .collection('c')
      .insertOne({ _id: 4 as never });
    await cluster.stop('n0');
    await cluster.start('n1');
    await cluster.promote('n1');
    await cluster.start('n2');
    expect(cluster.primary().name).toBe('n1');
    expect(cluster.replicas().map((n) => [n.name, n.running])).toEqual([
      ['n0', false],
      ['n2', true],
    ]);
    const hello = await direct(cluster, 'n1').db('admin').command({ hello: 1 });
    expect(hello.isWritablePrimary).toBe(true);
    expect(Number(hello.lastWrite.opTime.t)).toBe(2);
    await eventually(async () => (await idsOn(direct(cluster, 'n2'))).includes(3));
    expect(await idsOn(direct(cluster, 'n1'))).toEqual([3]);
    expect(await idsOn(direct(cluster, 'n2'))).toEqual([3]);
    // The old primary rejoins as a secondary of the new history: write 4 rolled back.
    await cluster.start('n0');
    expect(await idsOn(direct(cluster, 'n0'))).toEqual([3]);
  });

  it('declares every capability', async () => {
    const cluster = await simulated();
    expect([...cluster.capabilities].sort()).toEqual([...STAGING_CAPABILITIES].sort());
    expect([...providerCapabilities('local', 'mongo-sim')].sort()).toEqual(
      [...STAGING_CAPABILITIES].sort(),
    );
  });

  it('cutOff: the member keeps answering reads and receives nothing until reconnect', async () => {
    const cluster = await simulated();
    const writer = replicaSet(cluster, '1');
    await cluster.cutOff('n1');
    await writer
      .db('t')
      .collection('c')
      .insertOne({ _id: 10 as never });
    await eventually(async () => (await idsOn(direct(cluster, 'n2'))).includes(10));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await idsOn(direct(cluster, 'n1'))).toEqual([]);
    await cluster.reconnect('n1');
    await eventually(async () => (await idsOn(direct(cluster, 'n1'))).includes(10));
  });

  it('freeze: connections open, no answer until thaw', async () => {
    const cluster = await simulated();
    await cluster.freeze('n2');
    const answer = direct(cluster, 'n2').db('admin').command({ ping: 1 });
    answer.catch(() => undefined);
    const raced = await Promise.race([
      answer.then(() => 'answered'),
      new Promise((resolve) => setTimeout(() => resolve('silent'), 500)),
    ]);
    expect(raced).toBe('silent');
    await cluster.thaw('n2');
    await eventually(async () => {
      await direct(cluster, 'n2').db('admin').command({ ping: 1 });
      return true;
    });
  });

  it('promote with repoint: [] leaves a member on the old history; rejoin rolls it back', async () => {
    const cluster = await simulated();
    const writer = replicaSet(cluster, '1');
    await cluster.stop('n1');
    await writer
      .db('t')
      .collection('c')
      .insertOne({ _id: 20 as never });
    await eventually(async () => (await idsOn(direct(cluster, 'n2'))).includes(20));
    await cluster.kill('n0');
    await cluster.start('n1');
    await cluster.promote('n1', { repoint: [] });
    expect(cluster.primary().name).toBe('n1');
    expect(cluster.replicas().map((n) => n.name)).toEqual(['n0', 'n2']);
    const after = replicaSet(cluster, '1');
    await after
      .db('t')
      .collection('c')
      .insertOne({ _id: 21 as never });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await idsOn(direct(cluster, 'n1'))).toEqual([21]);
    // Still serving the lost write, never the new primary's.
    expect(await idsOn(direct(cluster, 'n2'))).toEqual([20]);
    const oplog = await direct(cluster, 'n2').db('local').collection('oplog.rs').find({}).toArray();
    expect(oplog.every((entry) => Number(entry['t']) === 1)).toBe(true);
    // Its optimes, the majority point included, stay on the old history (term 1).
    const hello = await direct(cluster, 'n2').db('admin').command({ hello: 1 });
    expect(Number(hello.lastWrite.opTime.t)).toBe(1);
    expect(Number(hello.lastWrite.majorityOpTime.t)).toBe(1);
    await cluster.rejoin('n2');
    expect(await idsOn(direct(cluster, 'n2'))).toEqual([21]);
    await cluster.rejoin('n0');
    expect(cluster.nodes().every((n) => n.running)).toBe(true);
    expect(await idsOn(direct(cluster, 'n0'))).toEqual([21]);
  });
});
