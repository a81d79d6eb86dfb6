import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { startCluster } from './src/index.js';
const modes = (process.env['MODES'] ?? 'cold,warm,warm,warm').split(',');
for (const target of (process.env['T'] ?? 'pg15,pg18,pg19').split(',')) {
  for (const mode of modes) {
    if (mode === 'cold') execSync('sync; echo 3 > /proc/sys/vm/drop_caches');
    const t0 = performance.now();
    const c = await startCluster(target, { provider: 'local' });
    const start = performance.now() - t0;
    const st = async (n: string) => ((await c.exec(n, 'SELECT pg_postmaster_start_time()::text AS t')) as { t: string }[])[0]!.t;
    const before = await st('n2');
    const t2 = performance.now();
    await c.promote('n1');
    const promote = performance.now() - t2;
    const restarted = before !== (await st('n2'));
    const t1 = performance.now();
    await c.teardown();
    console.log(`${target} ${mode}: start ${Math.round(start)} ms, promote ${Math.round(promote)} ms (n2 restarted: ${restarted}), teardown ${Math.round(performance.now() - t1)} ms, load ${loadavg()[0]!.toFixed(1)}`);
  }
}
