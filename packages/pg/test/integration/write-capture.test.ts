import type { Cluster } from '@tidemark/test-clusters';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgAdapterError, PgErrorCode, parseLsn } from '../../src/index.js';
import { toRecordEnd, WAL_GEOMETRY_SQL, walGeometryFromRow } from '../../src/wal-geometry.js';
import {
  adapterFor,
  connect,
  eventually,
  noSignal,
  pgTargets,
  startPgCluster,
  withConnection,
} from './support.js';

const targets = pgTargets();

describe.skipIf(targets.length === 0).each(targets)('%s: write and capture', (target) => {
  let cluster: Cluster;
  let primaryUrl: string;

  beforeAll(async () => {
    cluster = await startPgCluster(target, 1);
    primaryUrl = cluster.primary().url;
    await cluster.exec(
      cluster.primary().name,
      'CREATE TABLE items (id int PRIMARY KEY, note text); CREATE EXTENSION IF NOT EXISTS pg_walinspect',
    );
  }, 180_000);

  afterAll(async () => {
    await cluster?.teardown();
  });

  it('costs 0 extra round trips in a managed transaction and in autocommit with pipelineCapture (1 without it)', async () => {
    const adapter = adapterFor(cluster, { pipelineCapture: true });
    const unpipelined = adapterFor(cluster);
    try {
      const before = adapter.roundTrips();
      await adapter.write((c) => c.query('INSERT INTO items VALUES (1)'), {});
      const managed = adapter.roundTrips();
      const { position } = await adapter.write((c) => c.query('INSERT INTO items VALUES (2)'), {
        transaction: false,
      });
      const autocommit = adapter.roundTrips();
      // Control: the same write capturing after the callback, as before pipelining.
      const unpipelinedBefore = unpipelined.roundTrips();
      await unpipelined.write((c) => c.query('INSERT INTO items VALUES (5)'), {
        transaction: false,
      });
      const unpipelinedTrips = unpipelined.roundTrips().roundTrips - unpipelinedBefore.roundTrips;

      // Baseline: the same work with plain node-postgres, no position captured.
      const plain = await connect(primaryUrl);
      let plainManaged = 0;
      let plainAutocommit = 0;
      try {
        for (const text of ['BEGIN', 'INSERT INTO items VALUES (3)', 'COMMIT']) {
          await plain.query(text);
          plainManaged++;
        }
        await plain.query('INSERT INTO items VALUES (4)');
        plainAutocommit++;
      } finally {
        await plain.end();
      }

      const managedTrips = managed.roundTrips - before.roundTrips;
      const autocommitTrips = autocommit.roundTrips - managed.roundTrips;
      console.log(
        `[${target}] round trips per write with 1 INSERT: managed ${managedTrips} (plain pg ${plainManaged}), autocommit ${autocommitTrips} (plain pg ${plainAutocommit}; capture not pipelined ${unpipelinedTrips})`,
      );
      expect(managed.writes - before.writes).toBe(1);
      expect(managedTrips - plainManaged).toBe(0);
      expect(autocommitTrips - plainAutocommit).toBe(0);
      expect(unpipelinedTrips - plainAutocommit).toBe(1);
      // The pipelined capture is a real position, past the row it follows.
      expect(position).toBeDefined();
      expect(position?.timeline).toBe(1);
    } finally {
      await adapter.close();
      await unpipelined.close();
    }
  });

  it('autocommit: the pipelined capture is at or past the commit record of the last statement (pg_walinspect)', async () => {
    const adapter = adapterFor(cluster, { pipelineCapture: true });
    try {
      for (const synchronousCommit of ['on', 'off']) {
        for (let i = 0; i < 10; i++) {
          const id = 3000 + i + (synchronousCommit === 'off' ? 50 : 0);
          const { value: xid, position } = await adapter.write(
            async (c) => {
              await c.query(`SET synchronous_commit = ${synchronousCommit}`);
              const { rows } = await c.query(
                'INSERT INTO items VALUES ($1) RETURNING pg_current_xact_id()::text AS xid',
                [id],
              );
              await c.query('RESET synchronous_commit');
              return rows[0].xid as string;
            },
            { transaction: false },
          );
          expect(position).toBeDefined();
          const commitEnd = await commitRecordEnd(primaryUrl, xid, position!.lsn);
          expect(position!.lsn).toBeGreaterThanOrEqual(commitEnd);
        }
      }
    } finally {
      await adapter.close();
    }
  });

  it('autocommit: a failing statement, a callback that throws and a portal query leave the connection usable', async () => {
    const adapter = adapterFor(cluster, { poolSize: 1, pipelineCapture: true });
    try {
      await adapter.write((c) => c.query('INSERT INTO items VALUES (3100)'), {
        transaction: false,
      });
      // The capture behind a failing statement still runs; the statement's error is what comes back.
      await expect(
        adapter.write((c) => c.query('INSERT INTO items VALUES (3100)'), { transaction: false }),
      ).rejects.toMatchObject({ code: '23505' });
      await expect(
        adapter.write(
          async (c) => {
            await c.query('INSERT INTO items VALUES (3101)');
            throw new Error('boom');
          },
          { transaction: false },
        ),
      ).rejects.toThrow('boom');
      // A query that keeps a portal open (`rows`) is never pipelined behind; the position then
      // comes from a capture after the callback (one round trip, as before pipelining).
      const trips = adapter.roundTrips().roundTrips;
      const portal = await adapter.write(
        async (c) => {
          await c.query('INSERT INTO items VALUES (3102)');
          // `rows` is a runtime option of node-postgres that its types do not declare.
          const portalQuery = { text: 'SELECT id FROM items WHERE id >= 3100', rows: 10 };
          const { rows } = await c.query(portalQuery as unknown as pg.QueryConfig);
          return rows.length;
        },
        { transaction: false },
      );
      expect(portal.value).toBe(3);
      expect(portal.position).toBeDefined();
      expect(adapter.roundTrips().roundTrips - trips).toBe(3);
      // The single pooled connection still answers plain and pipelined queries in order.
      const last = await adapter.write(
        async (c) => (await c.query('INSERT INTO items VALUES (3103) RETURNING id')).rows[0].id,
        { transaction: false },
      );
      expect(last.value).toBe(3103);
      expect(last.position!.lsn).toBeGreaterThanOrEqual(portal.position!.lsn);
    } finally {
      await adapter.close();
    }
  });

  it('captures a position at or past the commit record (pg_walinspect)', async () => {
    const adapter = adapterFor(cluster);
    try {
      for (const synchronousCommit of ['on', 'off']) {
        for (let i = 0; i < 10; i++) {
          const id = 100 + i + (synchronousCommit === 'off' ? 50 : 0);
          const { value: xid, position } = await adapter.write(async (c) => {
            await c.query(`SET LOCAL synchronous_commit = ${synchronousCommit}`);
            await c.query('INSERT INTO items VALUES ($1)', [id]);
            const { rows } = await c.query('SELECT pg_current_xact_id()::text AS xid');
            return rows[0].xid as string;
          }, {});
          const commitEnd = await commitRecordEnd(primaryUrl, xid, position.lsn);
          expect(position.lsn).toBeGreaterThanOrEqual(commitEnd);
          expect(position.timeline).toBe(1);
        }
      }
    } finally {
      await adapter.close();
    }
  });

  it('measures: with synchronous_commit = off the write position can trail the commit, the insert position cannot', async () => {
    const client = await connect(primaryUrl);
    let writeBehind = 0;
    let insertBehind = 0;
    const runs = 20;
    try {
      for (let i = 0; i < runs; i++) {
        await client.query('BEGIN');
        await client.query('SET LOCAL synchronous_commit = off');
        await client.query('INSERT INTO items VALUES ($1)', [1000 + i]);
        const xid = (await client.query('SELECT pg_current_xact_id()::text AS xid')).rows[0].xid;
        const results = (await client.query(
          'COMMIT; SELECT pg_current_wal_lsn()::text AS write, pg_current_wal_insert_lsn()::text AS insert',
        )) as unknown as pg.QueryResult[];
        const row = results[1]?.rows[0];
        const insert = parseLsn(row.insert);
        const end = await commitRecordEnd(primaryUrl, xid as string, insert);
        if (parseLsn(row.write) < end) writeBehind++;
        if (insert < end) insertBehind++;
      }
    } finally {
      await client.end();
    }
    console.log(
      `[${target}] synchronous_commit=off, ${runs} commits: pg_current_wal_lsn() below the commit record end ${writeBehind} times, pg_current_wal_insert_lsn() ${insertBehind} times`,
    );
    expect(insertBehind).toBe(0);
  });

  it.each([
    {
      shape: 'managed transaction, COMMIT + capture in one message',
      transaction: true,
      id: 500,
      running: 'COMMIT; SELECT pg_current_wal_insert_lsn()%',
    },
    {
      shape: 'autocommit, capture pipelined behind the INSERT',
      transaction: false,
      id: 501,
      running: 'INSERT INTO items VALUES (501)',
    },
  ])(
    'takes the position only after the commit completed, $shape (commit held in a synchronous-replication wait)',
    async ({ transaction, id, running }) => {
      const adapter = adapterFor(cluster, { pipelineCapture: !transaction });
      const observer = await connect(primaryUrl);
      try {
        // Every commit now waits for a standby that does not exist, until we lift the setting.
        await observer.query("ALTER SYSTEM SET synchronous_standby_names = 'tidemark_nobody'");
        await observer.query('SELECT pg_reload_conf()');
        await eventually('the setting to apply', async () => {
          const { rows } = await observer.query('SHOW synchronous_standby_names');
          return rows[0].synchronous_standby_names === 'tidemark_nobody' ? true : undefined;
        });
        let settled = false;
        const pending = adapter
          .write((c) => c.query(`INSERT INTO items VALUES (${id})`), { transaction })
          .finally(() => {
            settled = true;
          });
        // The commit is stuck waiting for the standby, and the capture behind it has not run...
        const backend = await eventually('the commit to wait for the standby', async () => {
          const { rows } = await observer.query(
            "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query LIKE $1",
            [running],
          );
          return rows[0]?.pid as number | undefined;
        });
        expect(backend).toBeGreaterThan(0);
        // ...so no position has come back, and other sessions do not see the row yet.
        expect(settled).toBe(false);
        expect((await observer.query('SELECT 1 FROM items WHERE id = $1', [id])).rowCount).toBe(0);
        // The commit record is in the WAL already; anything captured after COMMIT must cover it.
        const inserted = parseLsn(
          (await observer.query('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0].lsn,
        );
        const geometry = walGeometryFromRow((await observer.query(WAL_GEOMETRY_SQL)).rows[0]);
        await observer.query('ALTER SYSTEM RESET synchronous_standby_names');
        await observer.query('SELECT pg_reload_conf()');
        const { position } = await pending;
        expect(position.lsn).toBeGreaterThanOrEqual(toRecordEnd(inserted, geometry));
        expect((await observer.query('SELECT 1 FROM items WHERE id = $1', [id])).rowCount).toBe(1);
      } finally {
        await observer.query('ALTER SYSTEM RESET synchronous_standby_names').catch(() => undefined);
        await observer.query('SELECT pg_reload_conf()').catch(() => undefined);
        await observer.end();
        await adapter.close();
      }
    },
  );

  it('a replica that replayed the captured position shows the row, every time', async () => {
    const adapter = adapterFor(cluster);
    const replica = cluster.replicas()[0]!;
    const reader = await connect(replica.url);
    try {
      for (let i = 0; i < 20; i++) {
        const id = 2000 + i;
        const { position } = await adapter.write(
          (c) => c.query('INSERT INTO items VALUES ($1)', [id]),
          { transaction: i % 2 === 0 },
        );
        await eventually(`${replica.name} to replay the write`, async () => {
          const probe = await adapter.probe(replica.name, {
            signal: noSignal(),
            primary: undefined,
          });
          return adapter.codec.compare(probe.applied, position) === 'covered' ? true : undefined;
        });
        expect((await reader.query('SELECT 1 FROM items WHERE id = $1', [id])).rowCount).toBe(1);
      }
    } finally {
      await reader.end();
      await adapter.close();
    }
  });

  it('a commit ending exactly on a WAL page boundary is covered once replayed (insert LSN points past the page header)', async () => {
    const adapter = adapterFor(cluster);
    const replica = cluster.replicas()[0]!;
    try {
      await adapter.probePrimary({ signal: noSignal() }); // learns the WAL page layout
      let hit: { lsn: bigint; writes: number } | undefined;
      for (let i = 0; i < 5000 && hit === undefined; i++) {
        const { position } = await adapter.write(
          // Varying sizes: with identical records the offsets cycle and may never hit a boundary.
          (c) => c.query("INSERT INTO items VALUES ($1, repeat('x', $2))", [10_000 + i, i % 97]),
          { transaction: false },
        );
        if (position.lsn % 8192n === 0n) hit = { lsn: position.lsn, writes: i + 1 };
      }
      expect(hit, 'no commit ended on a page boundary in 5000 writes').toBeDefined();
      const raw = await withConnection(primaryUrl, async (client) => {
        const { rows } = await client.query('SELECT pg_current_wal_insert_lsn()::text AS lsn');
        return parseLsn(rows[0].lsn);
      });
      const replayed = await eventually(
        'the replica to replay the boundary write',
        async () => {
          const probe = await adapter.probe(replica.name, {
            signal: noSignal(),
            primary: undefined,
          });
          return probe.applied.lsn >= hit!.lsn ? probe.applied.lsn : undefined;
        },
        3000,
      );
      console.log(
        `[${target}] commit ended on a page boundary after ${hit!.writes} writes: position ${hit!.lsn.toString(16)}, raw insert LSN now +${raw - hit!.lsn}, replica replayed +${replayed - hit!.lsn}`,
      );
    } finally {
      await adapter.close();
    }
  });

  it('rolls back and rethrows when the callback throws', async () => {
    const adapter = adapterFor(cluster);
    try {
      await expect(
        adapter.write(async (c) => {
          await c.query('INSERT INTO items VALUES (600)');
          throw new Error('boom');
        }, {}),
      ).rejects.toThrow('boom');
      const rows = await cluster.exec(cluster.primary().name, 'SELECT 1 FROM items WHERE id = 600');
      expect(rows).toHaveLength(0);
      // The connection went back clean: the next write works.
      await adapter.write((c) => c.query('INSERT INTO items VALUES (601)'), {});
    } finally {
      await adapter.close();
    }
  });

  it('reports a transaction rolled back at COMMIT instead of returning a position', async () => {
    const adapter = adapterFor(cluster);
    try {
      const write = adapter.write(async (c) => {
        await c.query('INSERT INTO items VALUES (700)');
        await c.query('SELECT 1/0').catch(() => undefined);
      }, {});
      await expect(write).rejects.toBeInstanceOf(PgAdapterError);
      await expect(write).rejects.toMatchObject({ code: PgErrorCode.RolledBack });
      const rows = await cluster.exec(cluster.primary().name, 'SELECT 1 FROM items WHERE id = 700');
      expect(rows).toHaveLength(0);
    } finally {
      await adapter.close();
    }
  });

  it.each([false, true])(
    'refuses to capture inside a transaction left open by an autocommit write (pipelineCapture %s)',
    async (pipelineCapture) => {
      const adapter = adapterFor(cluster, { pipelineCapture });
      try {
        const write = adapter.write(
          async (c) => {
            await c.query('BEGIN');
            await c.query('INSERT INTO items VALUES (800)');
          },
          { transaction: false },
        );
        await expect(write).rejects.toMatchObject({ code: PgErrorCode.TransactionLeftOpen });
        // Same with a node-postgres version that does not report the transaction status: the
        // capture query itself notices the open write transaction.
        const blind = adapter.write(
          async (c) => {
            Object.defineProperty(c, 'getTransactionStatus', {
              value: undefined,
              configurable: true,
            });
            await c.query('BEGIN');
            await c.query('INSERT INTO items VALUES (801)');
          },
          { transaction: false },
        );
        await expect(blind).rejects.toMatchObject({ code: PgErrorCode.TransactionLeftOpen });
        const rows = await cluster.exec(
          cluster.primary().name,
          'SELECT 1 FROM items WHERE id IN (800, 801)',
        );
        expect(rows).toHaveLength(0);
      } finally {
        await adapter.close();
      }
    },
  );
});

/**
 * End LSN of the commit record of `xid`, read with pg_walinspect from the WAL before `upTo`.
 * Waits until that WAL is flushed: PostgreSQL 15 refuses to read past the flush position. `upTo`
 * may be a raw insert position just past a page header, which the flush position never reaches
 * until the next record: compare in record-end form.
 */
async function commitRecordEnd(url: string, xid: string, upTo: bigint): Promise<bigint> {
  return withConnection(url, async (client) => {
    const geometry = walGeometryFromRow((await client.query(WAL_GEOMETRY_SQL)).rows[0]);
    const end = toRecordEnd(upTo, geometry);
    const endText = `${(end >> 32n).toString(16)}/${(end & 0xffffffffn).toString(16)}`;
    await eventually('WAL to be flushed', async () => {
      const { rows } = await client.query('SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS ok', [
        endText,
      ]);
      return rows[0].ok ? true : undefined;
    });
    const { rows } = await client.query(
      `SELECT end_lsn::text AS end_lsn FROM pg_get_wal_records_info($1::pg_lsn - 65536, $1::pg_lsn)
        WHERE record_type = 'COMMIT' AND xid::text = $2`,
      [endText, xid],
    );
    if (rows.length !== 1) throw new Error(`commit record of ${xid} not found before ${endText}`);
    return parseLsn(rows[0].end_lsn);
  });
}
