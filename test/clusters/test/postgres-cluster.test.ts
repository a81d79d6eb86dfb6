// Each PostgreSQL target of the local provider, end to end against real servers. A target that
// cannot start fails every test below with the reason (beforeAll throws); nothing is skipped.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, type LocalPgCluster, startCluster } from '../src/index.js';
import {
  isAlive,
  mappedShmFiles,
  parseLsn,
  processesUnder,
  sysvSegmentsOf,
  targetsFromEnv,
  waitFor,
} from './helpers.js';

const MAJORS: Record<string, number> = { pg15: 15, pg18: 18, pg19: 19 };

async function ids(cluster: Cluster, node: string): Promise<number[]> {
  const rows = (await cluster.exec(node, 'SELECT id FROM items ORDER BY id')) as { id: number }[];
  return rows.map((r) => r.id);
}

async function hasRow(cluster: Cluster, node: string, id: number): Promise<boolean> {
  const rows = await cluster.exec(node, `SELECT 1 FROM items WHERE id = ${id}`);
  return rows.length === 1;
}

function waitForRow(cluster: Cluster, node: string, id: number) {
  return waitFor(`row ${id} on ${node}`, async () =>
    (await hasRow(cluster, node, id)) ? true : undefined,
  );
}

async function primaryTimeline(cluster: Cluster, node: string): Promise<number> {
  const [row] = (await cluster.exec(node, 'SELECT pg_walfile_name(pg_current_wal_lsn()) AS f')) as {
    f: string;
  }[];
  return Number.parseInt(row!.f.slice(0, 8), 16);
}

describe.each(targetsFromEnv())('local %s cluster', (target) => {
  let cluster: Cluster;
  let startMs = 0;

  beforeAll(async () => {
    const t0 = performance.now();
    cluster = await startCluster(target, { provider: 'local' });
    startMs = performance.now() - t0;
    console.log(
      `[${target}] primary + 2 replicas ready in ${Math.round(startMs)} ms (${cluster.version})`,
    );
  });

  afterAll(async () => {
    await cluster?.teardown();
  });

  it('starts one primary and two streaming replicas on 127.0.0.1', async () => {
    expect(cluster.target).toBe(target);
    expect(cluster.flavour).toBe('postgres');
    expect(cluster.version).toMatch(new RegExp(`^${MAJORS[target]}`));
    expect(cluster.nodes().map((n) => n.name)).toEqual(['n0', 'n1', 'n2']);
    expect(cluster.primary().name).toBe('n0');
    expect(cluster.replicas().map((n) => n.name)).toEqual(['n1', 'n2']);
    for (const node of cluster.nodes()) {
      expect(node.running).toBe(true);
      expect(node.host).toBe('127.0.0.1');
      expect(node.url).toBe(`postgres://postgres@127.0.0.1:${node.port}/postgres`);
      expect([5432, 3306, 6379, 5672, 1883, 4222]).not.toContain(node.port);
    }
    const [primary] = (await cluster.exec('n0', 'SELECT pg_is_in_recovery() AS r')) as {
      r: boolean;
    }[];
    expect(primary!.r).toBe(false);
    for (const name of ['n1', 'n2']) {
      const rows = (await cluster.exec(name, 'SELECT status FROM pg_stat_wal_receiver')) as {
        status: string;
      }[];
      expect(rows[0]?.status).toBe('streaming');
    }
    const senders = (await cluster.exec(
      'n0',
      'SELECT application_name FROM pg_stat_replication ORDER BY 1',
    )) as {
      application_name: string;
    }[];
    expect(senders.map((s) => s.application_name)).toEqual(['n1', 'n2']);
  });

  it('replicates a row written on the primary to both replicas', async () => {
    await cluster.exec('n0', 'CREATE TABLE items (id int PRIMARY KEY, note text)');
    await cluster.exec('n0', "INSERT INTO items VALUES (1, 'first')");
    await waitForRow(cluster, 'n1', 1);
    await waitForRow(cluster, 'n2', 1);
    expect(await ids(cluster, 'n1')).toEqual([1]);
  });

  it('pausing replay hides a new row on that replica only, and resuming shows it', async () => {
    await cluster.pauseReplay('n1');
    const [state] = (await cluster.exec('n1', 'SELECT pg_get_wal_replay_pause_state() AS s')) as {
      s: string;
    }[];
    expect(state!.s).toBe('paused');

    await cluster.exec('n0', "INSERT INTO items VALUES (2, 'while n1 is paused')");
    const [written] = (await cluster.exec('n0', 'SELECT pg_current_wal_lsn()::text AS lsn')) as {
      lsn: string;
    }[];
    const lsn = written!.lsn;
    await waitForRow(cluster, 'n2', 2);
    // n1 has received the WAL (so this is replay, not the network) but not applied it.
    await waitFor('n1 to receive the insert', async () => {
      const [r] = (await cluster.exec('n1', 'SELECT pg_last_wal_receive_lsn()::text AS l')) as {
        l: string;
      }[];
      return parseLsn(r!.l) >= parseLsn(lsn) ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await hasRow(cluster, 'n1', 2)).toBe(false);
    const positions = await cluster.positions();
    expect(parseLsn(positions['n1']!)).toBeLessThan(parseLsn(positions['n0']!));

    await cluster.resumeReplay('n1');
    await waitForRow(cluster, 'n1', 2);
  });

  it('positions() gives a parseable LSN per running node; replicas catch up to the primary', async () => {
    await cluster.exec('n0', "INSERT INTO items VALUES (3, 'positions')");
    const positions = await waitFor('replicas to catch up', async () => {
      const p = await cluster.positions();
      const primary = parseLsn(p['n0']!);
      return parseLsn(p['n1']!) === primary && parseLsn(p['n2']!) === primary ? p : undefined;
    });
    expect(Object.keys(positions).sort()).toEqual(['n0', 'n1', 'n2']);
    for (const text of Object.values(positions)) expect(parseLsn(text)).toBeGreaterThan(0n);
  });

  it('kill + start a replica: it comes back and catches up', async () => {
    const n2Dir = join((cluster as LocalPgCluster).directory, 'n2');
    const n2Processes = processesUnder(n2Dir);
    const postmaster = Number(readFileSync(join(n2Dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const segments = mappedShmFiles(n2Processes);
    expect(segments.length).toBeGreaterThan(0);
    expect(sysvSegmentsOf(postmaster).length).toBe(1);

    await cluster.kill('n2');
    // Every process gone at once, and the shared memory a crash leaves behind released.
    expect(n2Processes.filter(isAlive)).toEqual([]);
    expect(segments.filter((f) => existsSync(f))).toEqual([]);
    expect(sysvSegmentsOf(postmaster)).toEqual([]);
    expect(cluster.nodes().find((n) => n.name === 'n2')!.running).toBe(false);
    await expect(cluster.exec('n2', 'SELECT 1')).rejects.toThrow();
    expect(Object.keys(await cluster.positions()).sort()).toEqual(['n0', 'n1']);

    await cluster.exec('n0', "INSERT INTO items VALUES (4, 'while n2 is down')");
    const t0 = performance.now();
    await cluster.start('n2');
    console.log(
      `[${target}] replica restart after SIGKILL: ${Math.round(performance.now() - t0)} ms`,
    );
    expect(cluster.nodes().find((n) => n.name === 'n2')!.running).toBe(true);
    await waitForRow(cluster, 'n2', 4);
  });

  it('promote a replica: the other replica follows the new primary on a new timeline', async () => {
    const oldTimeline = await primaryTimeline(cluster, 'n0');
    expect(oldTimeline).toBe(1);

    const t0 = performance.now();
    await cluster.promote('n1');
    console.log(`[${target}] promote + re-point: ${Math.round(performance.now() - t0)} ms`);

    expect(cluster.primary().name).toBe('n1');
    const n0 = cluster.nodes().find((n) => n.name === 'n0')!;
    expect(n0.running).toBe(false);
    expect(n0.role).toBe('replica');
    expect(
      cluster
        .replicas()
        .map((n) => n.name)
        .sort(),
    ).toEqual(['n0', 'n2']);

    const newTimeline = await primaryTimeline(cluster, 'n1');
    expect(newTimeline).toBeGreaterThan(oldTimeline);

    await cluster.exec('n1', "INSERT INTO items VALUES (5, 'on the new primary')");
    await waitForRow(cluster, 'n2', 5);
    const [receiver] = (await cluster.exec(
      'n2',
      'SELECT received_tli, sender_port FROM pg_stat_wal_receiver',
    )) as {
      received_tli: number;
      sender_port: number;
    }[];
    expect(receiver!.received_tli).toBe(newTimeline);
    expect(receiver!.sender_port).toBe(cluster.primary().port);
    expect(await ids(cluster, 'n2')).toEqual([1, 2, 3, 4, 5]);
    const positions = await cluster.positions();
    expect(Object.keys(positions).sort()).toEqual(['n1', 'n2']);
  });

  it('the old primary, started again, is a standby of the new primary (clean switchover)', async () => {
    await cluster.start('n0');
    const [r] = (await cluster.exec('n0', 'SELECT pg_is_in_recovery() AS r')) as { r: boolean }[];
    expect(r!.r).toBe(true);
    await cluster.exec('n1', "INSERT INTO items VALUES (6, 'after the switchover')");
    await waitForRow(cluster, 'n0', 6);
  });

  it('teardown stops every process it started and removes its directory; twice is fine', async () => {
    const directory = (cluster as LocalPgCluster).directory;
    const before = processesUnder(directory);
    // Three postmasters plus their children (checkpointer, walsender, walreceiver, ...).
    expect(before.length).toBeGreaterThanOrEqual(9);

    const t0 = performance.now();
    await cluster.teardown();
    console.log(`[${target}] teardown: ${Math.round(performance.now() - t0)} ms`);

    expect(before.filter(isAlive)).toEqual([]);
    expect(processesUnder(directory)).toEqual([]);
    expect(existsSync(directory)).toBe(false);
    expect(cluster.nodes().every((n) => !n.running)).toBe(true);
    await cluster.teardown();
  });
});

describe.each(targetsFromEnv())('local %s cluster: failover with a lost write', (target) => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startCluster(target, { provider: 'local' });
  });

  afterAll(async () => {
    await cluster?.teardown();
  });

  it('a write only the crashed primary had is gone after promotion, and the old primary cannot rejoin', async () => {
    await cluster.exec('n0', 'CREATE TABLE items (id int PRIMARY KEY)');
    await waitFor('table on replicas', async () =>
      (await cluster.positions())['n2'] === (await cluster.positions())['n0'] ? true : undefined,
    );
    // Replicas down, a write on the primary, then the primary crashes: nobody else has it.
    await cluster.stop('n1');
    await cluster.stop('n2');
    await cluster.exec('n0', 'INSERT INTO items VALUES (99)');
    await cluster.kill('n0');
    await cluster.start('n1');
    await cluster.start('n2');

    await cluster.promote('n1');
    expect(cluster.primary().name).toBe('n1');
    await cluster.exec('n1', 'INSERT INTO items VALUES (1)');
    await waitForRow(cluster, 'n2', 1);
    expect(await ids(cluster, 'n1')).toEqual([1]);
    expect(await ids(cluster, 'n2')).toEqual([1]);

    await expect(cluster.start('n0')).rejects.toThrow(/history diverged from n1's/);
    // It runs (as a standby that cannot follow) and still shows the lost write.
    expect(await ids(cluster, 'n0')).toEqual([99]);
  });
});
