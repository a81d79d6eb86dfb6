// Runs the adapter and the unchanged core Router against the wire-protocol replica-set
// SIMULATOR (no real mongod is obtainable here). It proves what the adapter sends and how the
// router decides, not how a real mongod behaves.
import {
  ConfigError,
  ErrorCode,
  PRIMARY,
  ReplicasBehindError,
  Router,
  type RouterOptions,
  Session,
  TokenCodec,
} from '@tidemark/core';
import { MongoReplicaSetSimulator } from '@tidemark/test-clusters';
import { BSON, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createMongoAdapter,
  MajorityWriteConcernRequiredError,
  MongoAdapter,
  type MongoAdapterOptions,
  type MongoConnection,
  MongoErrorCode,
  type MongoPosition,
} from '../src/index.js';

const DATABASE = 'tidemark_test';
const ITERATIONS = 100;

let simulator: MongoReplicaSetSimulator;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  simulator = await MongoReplicaSetSimulator.start({ bson: BSON as never });
  console.log(`[mongo-sim] simulator replica set at ${simulator.uri}`);
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await simulator.stop();
});

function adapterOptions(
  extra: Partial<MongoAdapterOptions> = {},
  query = 'w=majority',
): MongoAdapterOptions {
  return {
    uri: `${simulator.uri}&${query}&serverSelectionTimeoutMS=3000`,
    database: DATABASE,
    replicas: {
      secondary1: simulator.member('secondary1').host,
      secondary2: simulator.member('secondary2').host,
    },
    ...extra,
  };
}

async function startRouter(
  adapter: MongoAdapter,
  options: Partial<RouterOptions<MongoPosition, MongoConnection>> = {},
): Promise<Router<MongoPosition, MongoConnection>> {
  const router = new Router({ adapter, monitorOptions: { intervalMs: 50 }, ...options });
  closers.push(() => router.close());
  await router.ready();
  return router;
}

/** A client bound to one member, reading with no token: what a naive router would do. */
async function naiveClient(member: string): Promise<MongoClient> {
  const client = new MongoClient(
    `mongodb://${simulator.member(member).host}/?directConnection=true`,
  );
  closers.push(() => client.close());
  await client.connect();
  return client;
}

function resumeAll(): void {
  for (const name of ['secondary1', 'secondary2']) {
    simulator.resume(name);
    simulator.setDelay(name, 0);
  }
}

describe('MongoAdapter configuration', () => {
  it('refuses a write concern other than majority with a typed config error', () => {
    let thrown: unknown;
    try {
      createMongoAdapter(adapterOptions({}, 'w=1'));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(MajorityWriteConcernRequiredError);
    expect((thrown as MajorityWriteConcernRequiredError).code).toBe('TIDEMARK_CONFIG');
    expect((thrown as Error).message).toContain('allowNonMajorityWrites');
  });

  it('accepts w=1 only with the explicit opt-out', async () => {
    const adapter = createMongoAdapter(adapterOptions({ allowNonMajorityWrites: true }, 'w=1'));
    await adapter.close();
  });

  it.each([
    ['no options', undefined],
    ['no uri', { database: DATABASE, replicas: {} }],
    ['an empty database', { uri: 'mongodb://127.0.0.1:1/?w=majority', database: '', replicas: {} }],
    ['no replicas object', { uri: 'mongodb://127.0.0.1:1/?w=majority', database: DATABASE }],
    [
      'a replica named primary',
      {
        uri: 'mongodb://127.0.0.1:1/?w=majority',
        database: DATABASE,
        replicas: { primary: 'h:1' },
      },
    ],
    [
      'a replica that is not host:port',
      { uri: 'mongodb://127.0.0.1:1/?w=majority', database: DATABASE, replicas: { r1: 'h' } },
    ],
    [
      'an unknown read concern level',
      {
        uri: 'mongodb://127.0.0.1:1/?w=majority',
        database: DATABASE,
        replicas: {},
        readConcernLevel: 'snapshot',
      },
    ],
    [
      'a negative heartbeat age',
      {
        uri: 'mongodb://127.0.0.1:1/?w=majority',
        database: DATABASE,
        replicas: {},
        heartbeatMaxAgeMs: -1,
      },
    ],
    ['a URI the driver cannot parse', { uri: 'http://x', database: DATABASE, replicas: {} }],
  ])('rejects %s with a ConfigError', (_name, options) => {
    expect(() => createMongoAdapter(options as unknown as MongoAdapterOptions)).toThrow(
      ConfigError,
    );
  });

  it('names an unknown replica with a typed ConfigError, refuses transaction: true, and counts round trips', async () => {
    const adapter = createMongoAdapter(adapterOptions());
    try {
      expect(adapter.replicas).toEqual(['secondary1', 'secondary2']);
      await expect(adapter.read('nope', async () => 1, {})).rejects.toThrow(ConfigError);
      await expect(
        adapter.probe('nope', { signal: new AbortController().signal, primary: undefined }),
      ).rejects.toMatchObject({ code: ErrorCode.Config });
      let ran = false;
      await expect(
        adapter.write(
          async () => {
            ran = true;
          },
          { transaction: true },
        ),
      ).rejects.toMatchObject({ code: MongoErrorCode.TransactionUnsupported });
      expect(ran).toBe(false);
      await adapter.write(
        ({ db, session }) => db.collection('items').insertOne({ key: 'trips' }, { session }),
        {},
      );
      await adapter.read(
        'primary',
        ({ db, session }) => db.collection('items').findOne({ key: 'trips' }, { session }),
        {},
      );
      // One insert, one find: the driver sends one command per operation in the session.
      expect(adapter.roundTrips()).toMatchObject({
        writes: 1,
        roundTrips: 1,
        reads: 1,
        readRoundTrips: 1,
      });
    } finally {
      await adapter.close();
    }
  });

  it('keeps the deprecated class name and stats() working', async () => {
    const adapter = new MongoAdapter(adapterOptions());
    expect(adapter.stats()).toEqual({ probesFromHeartbeats: 0, probesOverNetwork: 0 });
    await adapter.close();
  });
});

describe('read-your-writes through the core Router (simulator)', () => {
  it('captures the position from the write reply: zero extra round trips to the primary', async () => {
    resumeAll();
    const router = await startRouter(createMongoAdapter(adapterOptions()));
    const session = new Session();
    const before = simulator.commandLog.length;
    await router.write(session, ({ db, session: s }) =>
      db.collection('rtt').insertOne({ k: 'rtt' }, { session: s }),
    );
    const sent = simulator.commandLog
      .slice(before)
      .filter(
        (entry) => entry.member === 'primary' && !/^(hello|ismaster|isMaster)$/.test(entry.command),
      )
      .map((entry) => entry.command);
    console.log(`[mongo-sim] primary commands during one routed write: ${JSON.stringify(sent)}`);
    expect(sent).toEqual(['insert']);
    expect(session.positionText('default')).toMatch(/^[0-9a-z]+\.[0-9a-z]+\.[0-9a-z]+\./);
  });

  it('secondary2 paused (majority writes ack via secondary1): 0 misses; a naive read of secondary2 misses', async () => {
    resumeAll();
    // Round-robin, so that a router that ignored positions would send half the reads to
    // secondary2 (least-lag breaks ties by order and would hide that).
    const router = await startRouter(createMongoAdapter(adapterOptions()), {
      selection: 'round-robin',
    });
    const naive = await naiveClient('secondary2');
    simulator.pause('secondary2');
    let misses = 0;
    let naiveMisses = 0;
    const targets = new Map<string, number>();
    const reasons = new Map<string, number>();
    for (let n = 0; n < ITERATIONS; n++) {
      const session = new Session();
      const key = `ryw-a-${n}`;
      await router.write(session, ({ db, session: s }) =>
        db.collection('items').insertOne({ key }, { session: s }),
      );
      const { value, decision } = await router.readDetailed(session, ({ db, session: s }) =>
        db.collection('items').findOne({ key }, { session: s }),
      );
      targets.set(decision.target, (targets.get(decision.target) ?? 0) + 1);
      reasons.set(decision.reason, (reasons.get(decision.reason) ?? 0) + 1);
      if (value === null) misses++;
      if ((await naive.db(DATABASE).collection('items').findOne({ key })) === null) naiveMisses++;
    }
    console.log(
      `[mongo-sim] secondary2 paused: ${misses}/${ITERATIONS} routed misses, targets ${JSON.stringify(Object.fromEntries(targets))}, reasons ${JSON.stringify(Object.fromEntries(reasons))}; naive secondary2 misses ${naiveMisses}/${ITERATIONS}`,
    );
    expect(misses).toBe(0);
    expect(targets.get('secondary2') ?? 0).toBe(0);
    expect(naiveMisses).toBe(ITERATIONS);
  });

  it('both secondaries paused (w=1 opt-out): 0 misses via the primary; naive reads miss', async () => {
    resumeAll();
    const router = await startRouter(
      createMongoAdapter(adapterOptions({ allowNonMajorityWrites: true }, 'w=1')),
      { wait: { budgetMs: 20 }, fallback: { ratePerSecond: 1000, burst: 1000 } },
    );
    const naive = await naiveClient('secondary1');
    simulator.pause('secondary1');
    simulator.pause('secondary2');
    let misses = 0;
    let naiveMisses = 0;
    const reasons = new Map<string, number>();
    for (let n = 0; n < ITERATIONS; n++) {
      const session = new Session();
      const key = `ryw-b-${n}`;
      await router.write(session, ({ db, session: s }) =>
        db.collection('items').insertOne({ key }, { session: s }),
      );
      const { value, decision } = await router.readDetailed(session, ({ db, session: s }) =>
        db.collection('items').findOne({ key }, { session: s }),
      );
      reasons.set(decision.reason, (reasons.get(decision.reason) ?? 0) + 1);
      if (value === null) misses++;
      if ((await naive.db(DATABASE).collection('items').findOne({ key })) === null) naiveMisses++;
    }
    console.log(
      `[mongo-sim] both secondaries paused: ${misses}/${ITERATIONS} routed misses, reasons ${JSON.stringify(Object.fromEntries(reasons))}; naive misses ${naiveMisses}/${ITERATIONS}`,
    );
    expect(misses).toBe(0);
    // Every read on the primary: primary-fallback while the paused members are healthy, and
    // primary-no-replica once they are more than health.maxLagSeconds behind (on a slow run).
    expect((reasons.get('primary-fallback') ?? 0) + (reasons.get('primary-no-replica') ?? 0)).toBe(
      ITERATIONS,
    );
    expect(naiveMisses).toBe(ITERATIONS);
  });

  it('a token carried to another process (new Router and Session) still reads its write', async () => {
    resumeAll();
    simulator.pause('secondary2');
    const writer = await startRouter(createMongoAdapter(adapterOptions()));
    const reader = await startRouter(createMongoAdapter(adapterOptions()));
    const tokens = new TokenCodec();
    let misses = 0;
    for (let n = 0; n < 20; n++) {
      const session = new Session();
      const key = `carry-${n}`;
      await writer.write(session, ({ db, session: s }) =>
        db.collection('items').insertOne({ key }, { session: s }),
      );
      await session.settled();
      const carried = Session.fromToken(tokens.decode(tokens.encode(session.toTokenData())));
      const found = await reader.read(carried, ({ db, session: s }) =>
        db.collection('items').findOne({ key }, { session: s }),
      );
      if (found === null) misses++;
    }
    expect(misses).toBe(0);
  });
});

describe('bounded wait (afterClusterTime + maxTimeMS on the member, simulator)', () => {
  it('succeeds when a paused secondary resumes within the budget', async () => {
    resumeAll();
    const router = await startRouter(
      createMongoAdapter(adapterOptions({ allowNonMajorityWrites: true }, 'w=1')),
      { wait: { budgetMs: 3000 }, fallback: { enabled: false } },
    );
    simulator.pause('secondary1');
    simulator.pause('secondary2');
    const session = new Session();
    await router.write(session, ({ db, session: s }) =>
      db.collection('items').insertOne({ key: 'wait-1' }, { session: s }),
    );
    const logStart = simulator.commandLog.length;
    const resumeAfterMs = 300;
    const timer = setTimeout(() => resumeAll(), resumeAfterMs);
    const { value, decision } = await router.readDetailed(session, ({ db, session: s }) =>
      db.collection('items').findOne({ key: 'wait-1' }, { session: s }),
    );
    clearTimeout(timer);
    console.log(`[mongo-sim] bounded wait: ${JSON.stringify(decision)}`);
    expect(value).not.toBeNull();
    expect(decision.reason).toBe('replica-waited');
    expect(decision.target).not.toBe('primary');
    expect(decision.waitedMs).toBeGreaterThanOrEqual(resumeAfterMs - 20);
    expect(decision.waitedMs).toBeLessThan(3000);
    // The wait ran on a member, server-side: afterClusterTime = the write's time, with maxTimeMS.
    const written = session.position('default', router.codec)!;
    const waits = simulator.commandLog
      .slice(logStart)
      .filter((entry) => entry.command === 'find' && entry.readConcern?.afterClusterTime);
    expect(waits.length).toBeGreaterThan(0);
    const wait = waits[0]!;
    expect(wait.member).not.toBe('primary');
    expect(wait.readConcern?.level).toBe('majority');
    expect(wait.readConcern?.afterClusterTime?.t).toBe(written.time.t);
    expect(wait.readConcern?.afterClusterTime?.i).toBe(written.time.i);
    expect(wait.maxTimeMS).toBeGreaterThan(2500);
  });

  it('the server-side wait answers timeout (code 50) when the member stays paused', async () => {
    resumeAll();
    const adapter = createMongoAdapter(adapterOptions());
    closers.push(() => adapter.close());
    simulator.pause('secondary2');
    const session = new Session();
    const router = await startRouter(createMongoAdapter(adapterOptions()));
    await router.write(session, ({ db, session: s }) =>
      db.collection('items').insertOne({ key: 'wait-2' }, { session: s }),
    );
    const position = session.position('default', adapter.codec)!;
    const started = Date.now();
    const outcome = await adapter.waitFor('secondary2', position, 200);
    const elapsed = Date.now() - started;
    expect(outcome).toEqual({ outcome: 'timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(190);
    simulator.resume('secondary2');
    expect((await adapter.waitFor('secondary2', position, 2000)).outcome).toBe('reached');
  });

  it('fallback disabled and the wait budget spent: ReplicasBehindError', async () => {
    resumeAll();
    const router = await startRouter(
      createMongoAdapter(adapterOptions({ allowNonMajorityWrites: true }, 'w=1')),
      { wait: { budgetMs: 100 }, fallback: { enabled: false } },
    );
    simulator.pause('secondary1');
    simulator.pause('secondary2');
    const session = new Session();
    await router.write(session, ({ db, session: s }) =>
      db.collection('items').insertOne({ key: 'wait-3' }, { session: s }),
    );
    await expect(
      router.read(session, ({ db, session: s }) =>
        db.collection('items').findOne({ key: 'wait-3' }, { session: s }),
      ),
    ).rejects.toBeInstanceOf(ReplicasBehindError);
    resumeAll();
  });
});

describe('monotonic reads and monitoring (simulator)', () => {
  it("raises a fresh session's token to what its read observed on the member", async () => {
    resumeAll();
    const router = await startRouter(createMongoAdapter(adapterOptions()));
    const writer = new Session();
    await router.write(writer, ({ db, session: s }) =>
      db.collection('items').insertOne({ key: 'mono-1' }, { session: s }),
    );
    const written = writer.position('default', router.codec)!;
    const reader = new Session();
    const { value, decision } = await router.readDetailed(reader, ({ db, session: s }) =>
      db.collection('items').findOne({ key: 'mono-1' }, { session: s }),
    );
    expect(value).not.toBeNull();
    expect(decision.target).not.toBe('primary');
    const observed = reader.position('default', router.codec);
    expect(observed).toBeDefined();
    // The read saw the write, so its token must now require at least the write's time.
    expect(router.codec.compare(observed!, written)).toBe('covered');
  });

  it('answers probes from driver heartbeats instead of its own hello round trips', async () => {
    resumeAll();
    const measure = async (heartbeatMaxAgeMs: number) => {
      const adapter = createMongoAdapter(
        adapterOptions({ heartbeatMaxAgeMs, clientOptions: { heartbeatFrequencyMS: 500 } }),
      );
      const router = await startRouter(adapter, { monitorOptions: { intervalMs: 100 } });
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const stats = adapter.roundTrips();
      await router.close();
      return stats;
    };
    const cached = await measure(1000);
    const uncached = await measure(0);
    console.log(
      `[mongo-sim] probes over 2 s at 100 ms, heartbeats every 500 ms: with heartbeat cache ${JSON.stringify(cached)}; without ${JSON.stringify(uncached)}`,
    );
    expect(uncached.probesFromHeartbeats).toBe(0);
    expect(uncached.probesOverNetwork).toBeGreaterThan(10);
    expect(cached.probesFromHeartbeats).toBeGreaterThan(cached.probesOverNetwork);
  });

  it("a primary read's observed position carries the term of the primary that ran it, across an election", async () => {
    // Its own simulator: the election kills the shared one's primary.
    const own = await MongoReplicaSetSimulator.start({ bson: BSON as never });
    const adapter = createMongoAdapter({
      uri: `${own.uri}&w=1&serverSelectionTimeoutMS=5000&heartbeatFrequencyMS=500`,
      database: DATABASE,
      replicas: { secondary1: own.member('secondary1').host },
      allowNonMajorityWrites: true,
    });
    try {
      const readPrimary = () =>
        adapter.read(
          PRIMARY,
          ({ db, session: s }) => db.collection('items').findOne({}, { session: s }),
          { observe: false },
        );
      await adapter.write(({ db, session: s }) =>
        db.collection('items').insertOne({ key: 'term-1' }, { session: s }),
      );
      expect((await readPrimary()).observed?.term).toBe(1);
      await own.promote('secondary1');
      // The replica-set client finds the new primary by itself (the old one is down).
      const after = await readPrimary();
      expect(after.observed?.term).toBe(2);
      // A replica's read names no term: its newest entry's term is not known when it answers.
      const onReplica = await adapter.read(
        'secondary1',
        ({ db, session: s }) => db.collection('items').findOne({}, { session: s }),
        { observe: false },
      );
      expect(onReplica.observed?.term).toBe(0);
    } finally {
      await adapter.close();
      await own.stop();
    }
  });
});
