import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongoSimDatabase } from '../src/databases/mongo-sim/index.js';
import type { MongoDemoConnection } from '../src/databases/mongo-sim/pool.js';
import type { DemoCluster, NodePool } from '../src/databases/types.js';

// The `--db mongo-sim` module on its own, against the in-process replica-set SIMULATOR: each
// piece the workload and strategies rely on, so a broken piece fails here with a precise message
// rather than only as a count in the demo's output.

const database = createMongoSimDatabase();
const customer = 7;

let cluster: DemoCluster;
let primary: NodePool<MongoDemoConnection>;
let replica: NodePool<MongoDemoConnection>;

beforeAll(async () => {
  cluster = await database.startLocalCluster();
  primary = database.openPool(cluster.primaryUrl);
  replica = database.openPool(cluster.replicaUrl);
});

afterAll(async () => {
  await Promise.all([primary?.end(), replica?.end()]);
  await cluster?.close();
});

const place = (note: string) =>
  primary.use((connection) => database.orders.placeOrder(connection, customer, note));
const listOn = (pool: NodePool<MongoDemoConnection>, who = customer) =>
  pool.use((connection) => database.orders.latestOrders(connection, who));

describe('--db mongo-sim module (on the MongoDB replica-set simulator)', () => {
  it('names the simulator in what the user sees', () => {
    expect(database.name).toBe('mongo-sim');
    expect(cluster.description).toContain('MongoDB replica-set SIMULATOR');
    expect(cluster.description).toContain('not a real mongod');
    expect(database.texts.notice).toContain('not a real mongod');
    expect(cluster.primaryUrl).toMatch(/replicaSet=.*&w=majority$/);
    expect(cluster.replicaUrl).toMatch(/directConnection=true/);
  });

  it('starts every run on an empty orders collection and lists the latest 20, newest first', async () => {
    await cluster.resetOrders();
    const ids: number[] = [];
    for (let n = 1; n <= 22; n++) ids.push(await place(`order ${n}`));
    expect(ids).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
    await primary.use((connection) => database.orders.placeOrder(connection, 8, 'other customer'));
    expect(await listOn(primary)).toEqual(ids.slice(2).reverse());
    expect(await listOn(primary, 8)).toEqual([23]);

    await cluster.resetOrders();
    expect(await listOn(primary)).toEqual([]);
    expect(await place('first of the next run')).toBe(1);
  });

  it('lets the replica miss a write while replay is paused, and catch up after', async () => {
    await cluster.resetOrders();
    const before = await place('replicated');
    await cluster.waitForReplicaCatchUp();
    expect(await listOn(replica)).toEqual([before]);

    await cluster.pauseReplay();
    try {
      const during = await place('written while paused');
      expect(await listOn(primary)).toEqual([during, before]);
      expect(await listOn(replica)).toEqual([before]);
    } finally {
      await cluster.resumeReplay();
    }
    await cluster.waitForReplicaCatchUp();
    expect(await listOn(replica)).toEqual([2, 1]);
  });

  it("gives the lab router positions that tell whether the replica has the session's write", async () => {
    await cluster.resetOrders();
    const { lab } = database;
    const written = await primary.use(async (connection) => {
      await database.orders.placeOrder(connection, customer, 'tracked');
      return lab.afterWrite(connection);
    });
    await cluster.waitForReplicaCatchUp();
    const caughtUp = await lab.sample(replica);
    expect(caughtUp?.lagSeconds).toBe(0);
    expect(lab.covers(caughtUp!.applied, written)).toBe(true);

    await cluster.pauseReplay();
    try {
      const next = await primary.use(async (connection) => {
        await database.orders.placeOrder(connection, customer, 'not replayed yet');
        return lab.afterWrite(connection);
      });
      const paused = await lab.sample(replica);
      expect(lab.covers(paused!.applied, written)).toBe(true);
      expect(lab.covers(paused!.applied, next)).toBe(false);
    } finally {
      await cluster.resumeReplay();
    }
    await cluster.waitForReplicaCatchUp();
  });

  it("serves tidemark's reads the customer's own write, from the replica or the primary", async () => {
    await cluster.resetOrders();
    const strategy = await database.createTidemarkStrategy(
      { primaryUrl: cluster.primaryUrl, replicaUrl: cluster.replicaUrl, plannedReads: 10 },
      { waitBudgetMs: 250, fallbackRatePerSecond: 100, fallbackBurst: undefined },
    );
    try {
      const readList = () =>
        strategy.read(customer, (connection) => database.orders.latestOrders(connection, customer));
      const first = await strategy.write(customer, (connection) =>
        database.orders.placeOrder(connection, customer, 'via tidemark'),
      );
      const idle = await readList();
      expect(idle.value).toEqual([first]);
      expect(idle.target).toBe('replica');

      await cluster.pauseReplay();
      try {
        const second = await strategy.write(customer, (connection) =>
          database.orders.placeOrder(connection, customer, 'via tidemark, replay paused'),
        );
        const paused = await readList();
        expect(paused.value).toEqual([second, first]);
        expect(paused.target).toBe('primary');
      } finally {
        await cluster.resumeReplay();
      }
    } finally {
      await strategy.close();
    }
    await cluster.waitForReplicaCatchUp();
  });

  it('has no mode for your own cluster', async () => {
    await expect(database.connectExternalCluster('mongodb://p', 'mongodb://r')).rejects.toThrow(
      /takes no --primary-url/,
    );
  });
});
