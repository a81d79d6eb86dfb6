import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Cluster } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adapterFor, noSignal, pgTargets, sleep, startPgCluster } from './support.js';

const targets = pgTargets();

/**
 * The monitor's probes go out as named prepared statements unless `preparedProbes: false`. Checked
 * on the server's own statement log (`log_statement = 'all'`): a named statement is logged as
 * `execute tidemark_replica_probe`, plain text as `statement: SELECT ...`. Needs the node's log
 * file on this host (the harness's host-process targets); elsewhere the test says why it skips.
 */
describe.skipIf(targets.length === 0).each(targets)('%s: prepared probes', (target) => {
  let cluster: Cluster;
  let replica: string;
  let log: string | undefined;

  beforeAll(async () => {
    cluster = await startPgCluster(target, 1);
    replica = cluster.replicas()[0]!.name;
    const [row] = (await cluster.exec(replica, 'SHOW data_directory')) as Array<{
      data_directory: string;
    }>;
    const path = row ? join(dirname(row.data_directory), `${replica}.log`) : undefined;
    log = path && existsSync(path) ? path : undefined;
    if (!log) {
      console.warn(
        `\n*** ${target}: prepared-probe checks SKIPPED: the replica's log file is not on this host (looked for ${path}). ***\n`,
      );
      return;
    }
    await cluster.exec(cluster.primary().name, "ALTER SYSTEM SET log_statement = 'all'");
    await cluster.exec(cluster.primary().name, 'SELECT pg_reload_conf()');
    await cluster.exec(replica, "ALTER SYSTEM SET log_statement = 'all'").catch(() => undefined);
    await cluster.exec(replica, 'SELECT pg_reload_conf()');
    await sleep(200);
  }, 180_000);

  afterAll(async () => {
    await cluster?.teardown();
  });

  /** Probe (or observe) `replica` `times` times; the log lines that appeared meanwhile. */
  async function probeAndRead(
    preparedProbes: boolean | undefined,
    times: number,
    call: 'probe' | 'observe' = 'probe',
  ): Promise<string> {
    const before = readFileSync(log as string, 'utf8').length;
    const adapter = adapterFor(cluster, preparedProbes === undefined ? {} : { preparedProbes });
    try {
      for (let i = 0; i < times; i++) {
        if (call === 'observe') await adapter.observe(replica, { signal: noSignal() });
        else await adapter.probe(replica, { signal: noSignal(), primary: undefined });
      }
    } finally {
      await adapter.close();
    }
    await sleep(100);
    return readFileSync(log as string, 'utf8').slice(before);
  }

  it('by default a replica probe is a named prepared statement', async (ctx) => {
    if (!log) return ctx.skip();
    const lines = await probeAndRead(undefined, 5);
    expect(lines.match(/execute tidemark_replica_probe/g)?.length ?? 0).toBeGreaterThanOrEqual(5);
    expect(lines).not.toMatch(/statement: SELECT pg_is_in_recovery\(\)/);
  });

  it('an observation is a named prepared statement too, without the control-file read', async (ctx) => {
    if (!log) return ctx.skip();
    const lines = await probeAndRead(undefined, 5, 'observe');
    expect(lines.match(/execute tidemark_replica_observe/g)?.length ?? 0).toBeGreaterThanOrEqual(5);
    expect(lines).not.toMatch(/execute tidemark_replica_probe/);
    const plain = await probeAndRead(false, 3, 'observe');
    const statements = plain.match(/statement: SELECT pg_is_in_recovery\(\)[^\n]*/g) ?? [];
    expect(statements.length).toBeGreaterThanOrEqual(3);
    expect(plain).not.toMatch(/pg_control_checkpoint/);
  });

  it('preparedProbes: false sends the probe as plain text', async (ctx) => {
    if (!log) return ctx.skip();
    const lines = await probeAndRead(false, 5);
    expect(
      lines.match(/statement: SELECT pg_is_in_recovery\(\)/g)?.length ?? 0,
    ).toBeGreaterThanOrEqual(5);
    expect(lines).not.toMatch(/execute tidemark_replica_probe/);
  });

  it('rejects a preparedProbes that is not a boolean', () => {
    expect(() => adapterFor(cluster, { preparedProbes: 'yes' as unknown as boolean })).toThrow(
      /preparedProbes must be true or false/,
    );
  });
});
