// The failure topologies of the local clusters, end to end against real servers: a replica
// cut off from its primary, a frozen (SIGSTOPped) server, a promotion that leaves a replica on
// the old history, and rejoining diverged or stopped nodes. PostgreSQL targets from
// TIDEMARK_TARGETS (default pg15) and the MySQL family (default mysql97, mariadb1011).
// TIDEMARK_PROVIDER=testcontainers runs the same on containers (see README: Containers).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Cluster,
  MYSQL_TARGETS,
  providerCapabilities,
  STAGING_CAPABILITIES,
  startCluster,
} from '../src/index.js';
import { waitFor } from './helpers.js';

function stagingTargets(): string[] {
  const listed = (process.env['TIDEMARK_TARGETS'] ?? 'pg15,mysql97,mariadb1011')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  return listed.filter(
    (t) => t.startsWith('pg') || (MYSQL_TARGETS as readonly string[]).includes(t),
  );
}

// The providers whose clusters have every capability; anything else means local here.
const PROVIDER = process.env['TIDEMARK_PROVIDER'] === 'testcontainers' ? 'testcontainers' : 'local';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function hasRow(cluster: Cluster, node: string, id: number): Promise<boolean> {
  const rows = await cluster.exec(node, `SELECT id FROM items WHERE id = ${id}`);
  return rows.length === 1;
}

function waitForRow(cluster: Cluster, node: string, id: number) {
  return waitFor(`row ${id} on ${node}`, async () =>
    (await hasRow(cluster, node, id)) ? true : undefined,
  );
}

/** True when `node` answers nothing within `ms` (its port may still accept connections). */
async function silentFor(cluster: Cluster, node: string, ms: number): Promise<boolean> {
  const answer = cluster.exec(node, 'SELECT 1 AS one').then(
    () => 'answered' as const,
    () => 'failed' as const,
  );
  const outcome = await Promise.race([answer, sleep(ms).then(() => 'silent' as const)]);
  return outcome === 'silent';
}

/** Does a TCP connection to the node's port complete? */
async function acceptsTcp(host: string, port: number): Promise<boolean> {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    setTimeout(() => done(false), 2000);
  });
}

describe.each(stagingTargets())(`failure staging on ${PROVIDER} %s`, (target) => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startCluster(target, { provider: PROVIDER });
    await cluster.exec('n0', 'CREATE TABLE items (id int PRIMARY KEY)');
    await cluster.exec('n0', 'INSERT INTO items VALUES (1)');
    await waitForRow(cluster, 'n1', 1);
    await waitForRow(cluster, 'n2', 1);
  });

  afterAll(async () => {
    await cluster?.teardown();
  });

  it('declares every staging capability, follow-diverged for MySQL only', () => {
    const expected = [
      ...STAGING_CAPABILITIES,
      ...(cluster.flavour === 'mysql' ? (['follow-diverged'] as const) : []),
    ].sort();
    expect([...cluster.capabilities].sort()).toEqual(expected);
    expect([...providerCapabilities(PROVIDER, target)].sort()).toEqual(expected);
  });

  it('cutOff stops a replica receiving while it keeps serving reads; reconnect resumes', async () => {
    await cluster.cutOff('n1');
    await cluster.exec('n0', 'INSERT INTO items VALUES (2)');
    await waitForRow(cluster, 'n2', 2);
    await sleep(1000);
    // Still answering, with what it had before the cut.
    expect(await hasRow(cluster, 'n1', 1)).toBe(true);
    expect(await hasRow(cluster, 'n1', 2)).toBe(false);
    await cluster.reconnect('n1');
    await waitForRow(cluster, 'n1', 2);
  });

  it('freeze leaves the port open and answers nothing; thaw answers and catches up', async () => {
    const n2 = cluster.nodes().find((n) => n.name === 'n2')!;
    await cluster.freeze('n2');
    try {
      expect(await acceptsTcp(n2.host, n2.port)).toBe(true);
      expect(await silentFor(cluster, 'n2', 1500)).toBe(true);
      await cluster.exec('n0', 'INSERT INTO items VALUES (3)');
    } finally {
      await cluster.thaw('n2');
    }
    await waitForRow(cluster, 'n2', 3);
  });

  it('promote with repoint: [] leaves a replica on the old history, holding a lost write', async () => {
    await cluster.stop('n1');
    await cluster.exec('n0', 'INSERT INTO items VALUES (4)');
    await waitForRow(cluster, 'n2', 4);
    await cluster.kill('n0');
    await cluster.start('n1');
    await cluster.promote('n1', { repoint: [] });
    expect(cluster.primary().name).toBe('n1');
    expect(cluster.replicas().map((n) => n.name)).toEqual(['n0', 'n2']);
    expect(await hasRow(cluster, 'n1', 4)).toBe(false);
    await cluster.exec('n1', 'INSERT INTO items VALUES (5)');
    await sleep(1000);
    // n2 runs, serves the lost write and never sees the new primary's.
    expect(await hasRow(cluster, 'n2', 4)).toBe(true);
    expect(await hasRow(cluster, 'n2', 5)).toBe(false);
  });

  it('rejoin rebuilds a diverged replica as a follower of the current primary', async () => {
    await cluster.rejoin('n2');
    expect(cluster.replicas().find((n) => n.name === 'n2')?.running).toBe(true);
    expect(await hasRow(cluster, 'n2', 5)).toBe(true);
    expect(await hasRow(cluster, 'n2', 4)).toBe(false);
    await cluster.exec('n1', 'INSERT INTO items VALUES (6)');
    await waitForRow(cluster, 'n2', 6);
  });

  it('rejoin rebuilds the stopped, diverged old primary as a replica', async () => {
    await cluster.rejoin('n0');
    expect(cluster.primary().name).toBe('n1');
    expect(cluster.nodes().every((n) => n.running)).toBe(true);
    expect(await hasRow(cluster, 'n0', 6)).toBe(true);
    expect(await hasRow(cluster, 'n0', 4)).toBe(false);
    await cluster.exec('n1', 'INSERT INTO items VALUES (7)');
    await waitForRow(cluster, 'n0', 7);
    await waitForRow(cluster, 'n2', 7);
  });
});
