// History after elections, write terms, read-only reads and afterClusterTime on routed reads,
// against the wire-protocol replica-set SIMULATOR (no real mongod is obtainable here). Each test
// starts its own simulated set, because promotions change it for good.
import { OtherHistoryError, Router, Session } from '@tidemark/core';
import { MongoReplicaSetSimulator, type SimulatorBson } from '@tidemark/test-clusters';
import { BSON } from 'mongodb';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createMongoAdapter,
  HistoryBook,
  type MongoAdapter,
  type MongoConnection,
  MongoErrorCode,
  type MongoPosition,
  WriteInReadError,
} from '../src/index.js';

const DATABASE = 'tidemark_history';
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function simulatedSet(): Promise<MongoReplicaSetSimulator> {
  const simulator = await MongoReplicaSetSimulator.start({
    bson: BSON as unknown as SimulatorBson,
    memberNames: ['n0', 'n1', 'n2'],
  });
  closers.push(() => simulator.stop());
  return simulator;
}

/** An adapter for the set's current topology: every running secondary is a replica. */
function adapterFor(simulator: MongoReplicaSetSimulator, w: 'majority' | '1' = 'majority') {
  const replicas: Record<string, string> = {};
  for (const member of simulator.members) {
    if (member.role === 'secondary' && !member.down) replicas[member.name] = member.host;
  }
  const adapter = createMongoAdapter({
    uri: `${simulator.uri}&w=${w}&serverSelectionTimeoutMS=2000`,
    database: DATABASE,
    replicas,
    allowNonMajorityWrites: w === '1',
  });
  closers.push(() => adapter.close());
  return adapter;
}

async function routerFor(adapter: MongoAdapter): Promise<Router<MongoPosition, MongoConnection>> {
  const router = new Router({ adapter, monitorOptions: { intervalMs: 50 } });
  closers.push(() => router.close());
  await router.ready();
  return router;
}

const insert = (id: number) => (c: MongoConnection) =>
  c.db.collection('orders').insertOne({ _id: id as never, customer: 1 }, { session: c.session });
const ordersOf = (c: MongoConnection) =>
  c.db
    .collection('orders')
    .find({ customer: 1 }, { session: c.session })
    .toArray()
    .then((docs) => docs.map((doc) => Number(doc._id)));

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('write terms (simulator)', () => {
  it("takes the term from the write's own reply, even when the adapter's last primary probe is older", async () => {
    const simulator = await simulatedSet();
    const adapter = adapterFor(simulator);
    await adapter.probePrimary();
    await adapter.write(insert(1));
    await until(() => simulator.member('n1').appliedCount === simulator.primary.appliedCount);
    await simulator.promote('n1');
    // No probe since the election: only the insert reply's opTime.t can say term 2.
    const { position } = await adapter.write(insert(2));
    expect(simulator.currentTerm).toBe(2);
    expect(position.term).toBe(2);
  });
});

describe('history after an election (simulator)', () => {
  it('a write lost in a failover: OtherHistoryError, one oplog lookup, then remembered', async () => {
    const simulator = await simulatedSet();
    const writer = await routerFor(adapterFor(simulator, '1'));
    // The secondaries are down while the primary acknowledges the write (w: 1), and the old
    // primary is down before n1 comes back: n1 never receives the write, so promoting it loses it.
    await simulator.kill('n1');
    await simulator.kill('n2');
    const session = new Session();
    await writer.write(session, insert(10));
    await simulator.kill('n0');
    await simulator.restart('n1');
    await simulator.promote('n1');
    await simulator.restart('n2');
    const reader = await routerFor(adapterFor(simulator));
    const lookups = () =>
      simulator.commandLog.filter((c) => c.command === 'find' && c.ns === 'local.oplog.rs').length;
    const before = lookups();
    const errors: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      errors.push(await reader.read(session, ordersOf).catch((error: unknown) => error));
    }
    for (const error of errors) expect(error).toBeInstanceOf(OtherHistoryError);
    expect(lookups() - before).toBeGreaterThanOrEqual(1);
    expect(lookups() - before).toBeLessThanOrEqual(2);
    expect(reader.metrics().otherHistory).toBe(3);
  });

  it('a write that survived the election is served from a replica, not refused', async () => {
    const simulator = await simulatedSet();
    const writer = await routerFor(adapterFor(simulator));
    const session = new Session();
    await writer.write(session, insert(20));
    await until(() => simulator.member('n1').appliedCount === simulator.primary.appliedCount);
    await simulator.promote('n1');
    const reader = await routerFor(adapterFor(simulator));
    const { value, decision } = await reader.readDetailed(session, ordersOf);
    expect(value).toContain(20);
    expect(decision.target).toBe('n2');
    expect(reader.metrics().otherHistory).toBe(0);
  });
});

describe('HistoryBook verdicts', () => {
  const at = (t: number, term: number): MongoPosition => ({ time: { t, i: 1 }, term });

  it('decides by time within a term and by the oplog across terms, remembering verdicts', async () => {
    const answers = new Map<number, { term: number } | 'absent' | 'truncated'>([
      [10, { term: 1 }],
      [11, 'absent'],
      [12, { term: 2 }],
      [13, 'truncated'],
    ]);
    let lookups = 0;
    const book = new HistoryBook(async (time) => {
      lookups++;
      return answers.get(time.t) ?? 'absent';
    });
    const primary = at(100, 3);
    expect(await book.classify(primary, at(200, 3))).toBe('impossible');
    expect(await book.classify(primary, at(50, 4))).toBe('impossible');
    expect(await book.classify(primary, at(50, 3))).toBe('ok');
    expect(await book.classify(primary, at(50, 0))).toBe('ok');
    expect(lookups).toBe(0);
    expect(await book.classify(primary, at(10, 1))).toBe('ok');
    expect(await book.classify(primary, at(11, 1))).toBe('other-history');
    // An entry at that time but written in another term is another write: lost.
    expect(await book.classify(primary, at(12, 1))).toBe('other-history');
    expect(await book.classify(primary, at(13, 1))).toBe('ok');
    expect(lookups).toBe(4);
    expect(await book.classify(primary, at(11, 1))).toBe('other-history');
    expect(lookups).toBe(4);
    expect(book.verdict(at(10, 1))).toBe('kept');
    expect(book.verdict(at(11, 1))).toBe('lost');
  });

  it('an earlier term past the primary sample is lost, not ahead of the sample', async () => {
    let lookups = 0;
    const book = new HistoryBook(async () => {
      lookups++;
      return { term: 3 };
    });
    // A member that kept term-2 entries the new primary never had, probed after the primary's
    // sample was read: its time is past the sample's, its term is older.
    expect(await book.classify(at(100, 3), at(150, 2))).toBe('other-history');
    expect(lookups).toBe(0);
    expect(book.verdict(at(150, 2))).toBe('lost');
    // The same time in the primary's own term is only ahead of the sample.
    expect(await book.classify(at(100, 3), at(150, 3))).toBe('impossible');
  });
});

describe('routed reads (simulator)', () => {
  it('a write inside a read fails on the primary too, typed, not retried, nothing written', async () => {
    const simulator = await simulatedSet();
    simulator.pause('n1');
    simulator.pause('n2');
    const router = new Router({
      adapter: adapterFor(simulator),
      monitorOptions: { intervalMs: 50 },
      wait: { budgetMs: 20 },
    });
    closers.push(() => router.close());
    await router.ready();
    const session = new Session();
    await router.write(session, insert(30));
    const inserts = () => simulator.commandLog.filter((c) => c.command === 'insert').length;
    const before = inserts();
    const error = await router
      .read(session, (c) => c.db.collection('orders').insertOne({ _id: 31 as never }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteInReadError);
    expect((error as WriteInReadError).code).toBe(MongoErrorCode.WriteInRead);
    const viaCommand = await router
      .read(session, (c) => c.db.command({ insert: 'orders', documents: [{ _id: 32 }] }))
      .catch((e: unknown) => e);
    expect(viaCommand).toBeInstanceOf(WriteInReadError);
    expect(inserts()).toBe(before);
    expect(router.metrics().retries).toBe(0);
    // Reads through the same read-only connection still work (on the primary: replay is paused).
    const { value, decision } = await router.readDetailed(session, ordersOf);
    expect(decision.target).toBe('primary');
    expect(value).toContain(30);
  });

  it("sends the session's position as afterClusterTime on the routed read itself", async () => {
    const simulator = await simulatedSet();
    const router = await routerFor(adapterFor(simulator));
    const session = new Session();
    await router.write(session, insert(40));
    const required = session.position('default', router.codec)!;
    const before = simulator.commandLog.length;
    const { decision } = await router.readDetailed(session, ordersOf);
    const userFind = simulator.commandLog
      .slice(before)
      .find(
        (c) =>
          c.command === 'find' && c.ns === `${DATABASE}.orders` && c.member === decision.target,
      );
    expect(userFind?.readConcern?.afterClusterTime).toBeDefined();
    expect(userFind?.readConcern?.afterClusterTime?.t).toBe(required.time.t);
    expect(userFind?.readConcern?.afterClusterTime?.i).toBe(required.time.i);
  });

  it('a bounded wait on a member that went down gives up at its budget instead of failing later', async () => {
    const simulator = await simulatedSet();
    const adapter = adapterFor(simulator);
    const { position } = await adapter.write(insert(50));
    await simulator.kill('n1');
    // Server selection for the dead member would take serverSelectionTimeoutMS (2 s) and then
    // throw; the wait must answer "timeout" at its own budget so the router can fall back.
    const started = performance.now();
    const outcome = await adapter.waitFor('n1', position, 100);
    console.log(
      `[mongo-sim] wait on a killed member: ${JSON.stringify(outcome)} after ${Math.round(performance.now() - started)} ms`,
    );
    expect(outcome).toEqual({ outcome: 'timeout' });
    const aborted = await adapter.waitFor('n1', position, 5000, { signal: AbortSignal.abort() });
    expect(aborted).toEqual({ outcome: 'timeout' });
  });
});
