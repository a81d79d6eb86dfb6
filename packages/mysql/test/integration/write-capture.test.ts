import type { Cluster } from '@tidemark/test-clusters';
import type { Connection, ResultSetHeader } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GtidSet, MariadbGtidPosition } from '../../src/index.js';
import {
  adapterFor,
  connect,
  eventually,
  flavourOf,
  mysqlTargets,
  noSignal,
  rows,
  startMysqlCluster,
  withConnection,
} from './support.js';

const targets = mysqlTargets();

describe.skipIf(targets.length === 0).each(targets)('%s: write and capture', (target) => {
  const mysqlFlavour = flavourOf(target) === 'mysql';
  let cluster: Cluster;
  let primaryUrl: string;
  let nextId = 1;

  /** The primary's applied position as text, read without the adapter. */
  const primaryPosition = () =>
    withConnection(primaryUrl, async (c) => {
      const [row] = await rows(
        c,
        `SELECT ${mysqlFlavour ? '@@global.gtid_executed' : '@@global.gtid_current_pos'} AS p`,
      );
      return String(row?.['p']);
    });

  /** Exactly the transactions committed between two primary positions (MySQL) / the last one. */
  const committedBetween = (before: string, after: string): string =>
    mysqlFlavour
      ? GtidSet.parse(after).subtract(GtidSet.parse(before)).format()
      : MariadbGtidPosition.parse(after).format();

  beforeAll(async () => {
    cluster = await startMysqlCluster(target, 1);
    primaryUrl = cluster.primary().url;
    await cluster.exec(
      cluster.primary().name,
      'CREATE TABLE items (id int PRIMARY KEY, note text)',
    );
  }, 180_000);

  afterAll(async () => {
    await cluster?.teardown();
  });

  it('costs 0 extra round trips per write, managed and autocommit, and counts the session setup apart', async () => {
    const adapter = adapterFor(cluster, target);
    try {
      const before = adapter.roundTrips();
      await adapter.write((c) => c.query('INSERT INTO items (id) VALUES (?)', [nextId++]), {});
      const managed = adapter.roundTrips();
      await adapter.write((c) => c.query('INSERT INTO items (id) VALUES (?)', [nextId++]), {
        transaction: false,
      });
      const autocommit = adapter.roundTrips();

      // Baseline: the same work with plain mysql2, no position captured.
      const plain = await connect(primaryUrl);
      let plainManaged = 0;
      let plainAutocommit = 0;
      try {
        await plain.query('START TRANSACTION');
        await plain.query('INSERT INTO items (id) VALUES (?)', [nextId++]);
        await plain.query('COMMIT');
        plainManaged = 3;
        await plain.query('INSERT INTO items (id) VALUES (?)', [nextId++]);
        plainAutocommit = 1;
      } finally {
        await plain.end();
      }

      const managedTrips = managed.roundTrips - before.roundTrips;
      const autocommitTrips = autocommit.roundTrips - managed.roundTrips;
      console.log(
        `[${target}] round trips per write with 1 INSERT: managed ${managedTrips} (plain mysql2 ${plainManaged}), autocommit ${autocommitTrips} (plain mysql2 ${plainAutocommit}); session setup once per connection: ${autocommit.sessionSetups} connection(s), ${autocommit.setupRoundTrips} round trip(s)`,
      );
      expect(managed.writes - before.writes).toBe(1);
      expect(managedTrips - plainManaged).toBe(0);
      expect(autocommitTrips - plainAutocommit).toBe(0);
      expect(autocommit.captureFallbacks).toBe(0);
      // poolSize 4, two sequential writes: one pooled connection, set up once.
      expect(autocommit.sessionSetups).toBe(1);
      expect(autocommit.setupRoundTrips).toBe(1);
    } finally {
      await adapter.close();
    }
  });

  it('captures exactly the transaction it committed, in both modes', async () => {
    const adapter = adapterFor(cluster, target);
    try {
      for (const transaction of [true, false]) {
        const before = await primaryPosition();
        const { position } = await adapter.write(
          (c) => c.query('INSERT INTO items (id) VALUES (?)', [nextId++]),
          { transaction },
        );
        const after = await primaryPosition();
        expect(String(position)).toBe(committedBetween(before, after));
        if (mysqlFlavour) expect((position as GtidSet).count()).toBe(1n);
      }
    } finally {
      await adapter.close();
    }
  });

  it('collects every commit of an autocommit write, whichever driver API sent it', async () => {
    const adapter = adapterFor(cluster, target);
    try {
      const before = await primaryPosition();
      const { position } = await adapter.write(
        async (c) => {
          await c.query('INSERT INTO items (id) VALUES (?)', [nextId++]);
          await c.execute('INSERT INTO items (id) VALUES (?)', [nextId++]);
          // The callback API of the same connection goes through the same hook.
          await new Promise<void>((resolve, reject) => {
            // mysql2's typings call it a promise Connection; at run time it is the callback one.
            const callbackApi = c.connection as unknown as {
              query(sql: string, values: unknown[], callback: (error: unknown) => void): void;
            };
            callbackApi.query('INSERT INTO items (id) VALUES (?)', [nextId++], (error) =>
              error ? reject(error) : resolve(),
            );
          });
        },
        { transaction: false },
      );
      const after = await primaryPosition();
      expect(String(position)).toBe(committedBetween(before, after));
      if (mysqlFlavour) expect((position as GtidSet).count()).toBe(3n);
      expect(adapter.roundTrips().captureFallbacks).toBe(0);
    } finally {
      await adapter.close();
    }
  });

  it('falls back to one extra query, and a superset position, when no OK packet carried a position', async () => {
    const adapter = adapterFor(cluster, target);
    try {
      const before = adapter.roundTrips();
      const { position } = await adapter.write(
        async (c) => (await c.query('SELECT COUNT(*) AS n FROM items'))[0],
        {},
      );
      const after = adapter.roundTrips();
      expect(after.captureFallbacks - before.captureFallbacks).toBe(1);
      // START TRANSACTION, SELECT, COMMIT, and the fallback query.
      expect(after.roundTrips - before.roundTrips).toBe(4);
      const primary = await adapter.probePrimary({ signal: noSignal() });
      expect(adapter.codec.compare(position, primary)).toBe('covered');
    } finally {
      await adapter.close();
    }
  });

  it('a replica that applied the captured position shows the row, every time', async () => {
    const adapter = adapterFor(cluster, target);
    const replica = cluster.replicas()[0]!;
    const reader = await connect(replica.url);
    try {
      for (let i = 0; i < 20; i++) {
        const id = nextId++;
        const { position } = await adapter.write(
          (c) => c.query('INSERT INTO items (id) VALUES (?)', [id]),
          { transaction: i % 2 === 0 },
        );
        await eventually(`${replica.name} to apply the write`, async () => {
          const probe = await adapter.probe(replica.name, {
            signal: noSignal(),
            primary: undefined,
          });
          return adapter.codec.compare(probe.applied, position) === 'covered' ? true : undefined;
        });
        expect(await rows(reader, 'SELECT 1 FROM items WHERE id = ?', [id])).toHaveLength(1);
      }
    } finally {
      await reader.end();
      await adapter.close();
    }
  });

  it('rolls back and rethrows when the callback throws', async () => {
    const adapter = adapterFor(cluster, target);
    const id = nextId++;
    try {
      await expect(
        adapter.write(async (c) => {
          await c.query('INSERT INTO items (id) VALUES (?)', [id]);
          throw new Error('boom');
        }, {}),
      ).rejects.toThrow('boom');
      expect(
        await cluster.exec(cluster.primary().name, `SELECT 1 FROM items WHERE id = ${id}`),
      ).toHaveLength(0);
      await adapter.write((c) => c.query('INSERT INTO items (id) VALUES (?)', [id]), {});
    } finally {
      await adapter.close();
    }
  });

  it('does not hand a session with autocommit off to the next write', async () => {
    const adapter = adapterFor(cluster, target, { poolSize: 1 });
    try {
      await adapter.write(
        async (c) => {
          await c.query('SET autocommit = 0');
          await c.query('INSERT INTO items (id) VALUES (?)', [nextId++]);
          await c.query('COMMIT');
        },
        { transaction: false },
      );
      const { value } = await adapter.write(
        async (c) => {
          const [result] = await c.query<ResultSetHeader>('INSERT INTO items (id) VALUES (?)', [
            nextId++,
          ]);
          const [[row]] = (await c.query('SELECT @@autocommit AS a')) as unknown as [
            Array<{ a: number }>,
          ];
          return { affected: result.affectedRows, autocommit: row?.a };
        },
        { transaction: false },
      );
      expect(value).toEqual({ affected: 1, autocommit: 1 });
      expect(adapter.roundTrips().sessionSetups).toBe(2);
    } finally {
      await adapter.close();
    }
  });

  it('keeps tokens small: 50 writes of one session interleaved with other sessions', async () => {
    const adapter = adapterFor(cluster, target);
    const other: Connection = await connect(primaryUrl);
    try {
      let session: unknown;
      for (let i = 0; i < 50; i++) {
        const { position } = await adapter.write(
          (c) => c.query('INSERT INTO items (id) VALUES (?)', [nextId++]),
          {},
        );
        session = session === undefined ? position : adapter.codec.merge(session, position);
        await other.query('INSERT INTO items (id) VALUES (?)', [nextId++]);
      }
      const encoded = adapter.codec.encode(session);
      console.log(
        `[${target}] one session's 50 writes, each followed by another session's write: position token ${encoded.length} characters`,
      );
      expect(adapter.codec.decode(encoded)).toBeDefined();
      if (mysqlFlavour) expect((session as GtidSet).count()).toBe(50n);
      else expect((session as MariadbGtidPosition).gtids).toHaveLength(1);
    } finally {
      await other.end();
      await adapter.close();
    }
  });
});
