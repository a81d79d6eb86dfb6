// No orphans even when the test process does not call teardown(): an exiting process stops its
// servers from its exit handler, and a SIGKILLed one's servers are reaped by the next start.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type Cluster, startCluster } from '../src/index.js';
import { processesUnder, waitFor } from './helpers.js';

const fixture = fileURLToPath(new URL('./fixtures/start-cluster.ts', import.meta.url));
const TARGET = process.env['TIDEMARK_CRASH_TARGET'] ?? 'pg15';

function startChild(mode: 'hang' | 'exit' | 'exit-frozen') {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, TARGET, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const directory = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { directory: string }).directory);
    });
    child.once('exit', (code) =>
      reject(new Error(`child exited (${code}) before starting: ${stderr}`)),
    );
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, directory, exited };
}

describe(`crashed test processes leave no servers behind (${TARGET})`, () => {
  const clusters: Cluster[] = [];
  afterAll(async () => {
    await Promise.all(clusters.map((c) => c.teardown()));
  });

  it('a process that exits without teardown() stops its servers on the way out', async () => {
    const { directory, exited } = startChild('exit');
    const dir = await directory;
    await exited;
    await waitFor(
      'servers to stop',
      async () => (processesUnder(dir).length === 0 ? true : undefined),
      10_000,
    );
    // The directory is removed by the exit handler, or at the latest by the next start.
    if (existsSync(dir)) {
      clusters.push(await startCluster(TARGET, { provider: 'local', replicas: 0 }));
      expect(existsSync(dir)).toBe(false);
    }
  });

  it('a frozen (SIGSTOPped) server is continued and stopped when its process exits', async () => {
    const { directory, exited } = startChild('exit-frozen');
    const dir = await directory;
    await exited;
    await waitFor(
      'servers to stop',
      async () => (processesUnder(dir).length === 0 ? true : undefined),
      10_000,
    );
  });

  it('servers of a SIGKILLed test process are stopped and removed by the next start', async () => {
    const { child, directory, exited } = startChild('hang');
    const dir = await directory;
    expect(processesUnder(dir).length).toBeGreaterThanOrEqual(2);
    child.kill('SIGKILL');
    await exited;
    // Nothing could run in the killed process: its servers are orphans now.
    expect(processesUnder(dir).length).toBeGreaterThanOrEqual(2);

    clusters.push(await startCluster(TARGET, { provider: 'local', replicas: 0 }));
    expect(processesUnder(dir)).toEqual([]);
    expect(existsSync(dir)).toBe(false);
  });
});
