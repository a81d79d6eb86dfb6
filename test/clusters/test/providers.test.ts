// Provider selection and the providers other than 'local'. The external provider is exercised
// for real against a local pg15 cluster; testcontainers can only show its fast failure here.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Cluster,
  externalProvider,
  getProvider,
  localProvider,
  providerCapabilities,
  startCluster,
  testcontainersProvider,
} from '../src/index.js';
import { parseLsn, waitFor } from './helpers.js';

const PRIMARY_ENV = 'TIDEMARK_PG_PRIMARY_URL';
const REPLICAS_ENV = 'TIDEMARK_PG_REPLICA_URLS';

function withEnv(vars: Record<string, string | undefined>): () => void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

describe('provider selection', () => {
  it('rejects an unknown provider and an unknown target with a clear error', async () => {
    await expect(startCluster('pg15', { provider: 'kubernetes' })).rejects.toThrow(
      /unknown cluster provider 'kubernetes'/,
    );
    await expect(startCluster('pg99', { provider: 'local' })).rejects.toThrow(
      /does not support target 'pg99'/,
    );
    expect(localProvider.supports('pg15')).toBe(true);
    expect(localProvider.supports('mysql84')).toBe(false);
  });

  it('takes the provider from TIDEMARK_PROVIDER when none is given', async () => {
    const restore = withEnv({
      TIDEMARK_PROVIDER: 'external',
      [PRIMARY_ENV]: undefined,
      [REPLICAS_ENV]: undefined,
    });
    try {
      await expect(startCluster('pg15')).rejects.toThrow(
        `cannot start pg15 with the 'external' provider: ${PRIMARY_ENV} is not set`,
      );
    } finally {
      restore();
    }
    expect(getProvider('local')).toBe(localProvider);
  });
});

describe('testcontainers provider', () => {
  it('reports a missing container engine quickly, with the reason', async () => {
    // Loading the library takes a second on a busy machine; what must be fast is the answer.
    await import('testcontainers');
    const t0 = performance.now();
    const availability = await testcontainersProvider.available('pg15');
    const ms = performance.now() - t0;
    if (availability.ok) {
      // A machine with an engine: this check has nothing to show; say so instead of passing quietly.
      console.warn(
        'SKIPPED: a container engine is available, so pg15 has no fast failure to check',
      );
      return;
    }
    expect(availability.reason).toMatch(/container runtime/i);
    expect(ms).toBeLessThan(5_000);
    await expect(startCluster('pg15', { provider: 'testcontainers' })).rejects.toThrow(
      /cannot start pg15 with the 'testcontainers' provider: no container runtime/,
    );
  });

  it('reports a missing container engine quickly for the MySQL-family targets too', async () => {
    await import('testcontainers');
    for (const target of ['mysql97', 'mariadb1011']) {
      expect(testcontainersProvider.supports(target)).toBe(true);
      const t0 = performance.now();
      const availability = await testcontainersProvider.available(target);
      const ms = performance.now() - t0;
      if (availability.ok) {
        // A machine with an engine: this check has nothing to show; say so instead of passing quietly.
        console.warn(
          `SKIPPED: a container engine is available, so ${target} has no fast failure to check`,
        );
        return;
      }
      expect(availability.reason).toMatch(/no container runtime/);
      expect(ms).toBeLessThan(5_000);
      await expect(startCluster(target, { provider: 'testcontainers' })).rejects.toThrow(
        `cannot start ${target} with the 'testcontainers' provider: no container runtime`,
      );
    }
  });
});

describe('external provider (against a local pg15 cluster)', () => {
  let backing: Cluster;
  let cluster: Cluster;
  let restore: () => void = () => {};

  beforeAll(async () => {
    backing = await startCluster('pg15', { provider: 'local', replicas: 1 });
    restore = withEnv({
      [PRIMARY_ENV]: backing.primary().url,
      [REPLICAS_ENV]: backing
        .replicas()
        .map((n) => n.url)
        .join(','),
    });
  });

  afterAll(async () => {
    restore();
    await cluster?.teardown();
    await backing?.teardown();
  });

  it('honours replicas: 1 on the local provider', () => {
    expect(backing.nodes().map((n) => n.name)).toEqual(['n0', 'n1']);
  });

  it('checks the server it is pointed at', async () => {
    expect(await externalProvider.available('pg15')).toEqual({ ok: true });
    const wrong = await externalProvider.available('pg18');
    expect(wrong.ok).toBe(false);
    if (!wrong.ok) expect(wrong.reason).toMatch(/is PostgreSQL 15, target pg18 wants 18/);
  });

  it('starts from the URLs and does what SQL can do', async () => {
    cluster = await startCluster('pg15', { provider: 'external' });
    expect(cluster.version).toBe(backing.version);
    expect(cluster.primary().port).toBe(backing.primary().port);
    expect(cluster.replicas().map((n) => n.port)).toEqual([backing.replicas()[0]!.port]);

    await cluster.exec('n0', 'CREATE TABLE ext (id int)');
    // Pausing before n1 replays the CREATE would leave it without the table, not without the row.
    await waitFor('table on n1', async () => {
      const [row] = (await cluster.exec('n1', "SELECT to_regclass('ext') IS NOT NULL AS ok")) as {
        ok: boolean;
      }[];
      return row?.ok === true ? true : undefined;
    });
    await cluster.pauseReplay('n1');
    await cluster.exec('n0', 'INSERT INTO ext VALUES (1)');
    await new Promise((r) => setTimeout(r, 300));
    expect(await cluster.exec('n1', 'SELECT * FROM ext')).toEqual([]);
    await cluster.resumeReplay('n1');
    await waitFor('row on n1', async () =>
      (await cluster.exec('n1', 'SELECT * FROM ext')).length === 1 ? true : undefined,
    );

    const positions = await cluster.positions();
    expect(Object.keys(positions).sort()).toEqual(['n0', 'n1']);
    expect(parseLsn(positions['n0']!)).toBeGreaterThan(0n);
  });

  it('refuses process control with a clear error', async () => {
    for (const op of ['stop', 'kill', 'start', 'promote'] as const) {
      await expect(cluster[op]('n1')).rejects.toThrow(
        `${op}('n1') is not supported by the external provider`,
      );
    }
    expect([...cluster.capabilities]).toEqual(['pause']);
    expect([...cluster.capabilities]).toEqual([...providerCapabilities('external', 'pg15')]);
    for (const op of ['cutOff', 'reconnect', 'freeze', 'thaw', 'rejoin'] as const) {
      await expect(cluster[op]('n1')).rejects.toThrow(
        /is not supported by the external provider \(capability '[a-z-]+' missing\)/,
      );
    }
    // teardown leaves the servers alone.
    await cluster.teardown();
    expect(await backing.exec('n0', 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });
});
