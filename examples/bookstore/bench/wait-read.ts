/**
 * `pnpm bench:wait-read [--db mysql97|mariadb1011] [--reads N] [--runs R]`: a read that must see a
 * write the replica may not have applied yet, two ways, on the same replica connection:
 *
 *   wait-then-read  `SELECT WAIT_FOR_EXECUTED_GTID_SET(set, 1)` (MariaDB: `MASTER_GTID_WAIT`),
 *                   then the read: two round trips (what the MySQL adapter does today)
 *   one-message     both statements in one message (`multipleStatements`): one round trip
 *
 * Each iteration: insert a row on the primary, take its GTID position there (not timed), then time
 * the read of that row on the replica. Variants alternate per iteration, so both see the same
 * replay lag. Prints p50/p99 per variant, rows missing (must be 0 for both: the wait guarantees
 * it), and the ratio. A benchmark, never a test.
 */
import { parseArgs } from 'node:util';
import { type Cluster, startCluster } from '@tidemark/test-clusters';
import mysql from 'mysql2/promise';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    db: { type: 'string', default: 'mysql97' },
    reads: { type: 'string', default: '2000' },
    runs: { type: 'string', default: '3' },
  },
});
const target = values.db as string;
if (target !== 'mysql97' && target !== 'mariadb1011') {
  throw new Error('--db must be mysql97 or mariadb1011');
}
const reads = Number(values.reads);
const runs = Number(values.runs);
const mariadb = target === 'mariadb1011';

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

async function main(): Promise<void> {
  const cluster: Cluster = await startCluster(target, { replicas: 1, provider: 'local' });
  try {
    const primary = await mysql.createConnection({ uri: cluster.primary().url });
    const replica = await mysql.createConnection({
      uri: cluster.replicas()[0]!.url,
      multipleStatements: true,
    });
    await primary.query('CREATE TABLE IF NOT EXISTS wr (id INT PRIMARY KEY, v VARCHAR(40))');
    const positionSql = mariadb ? 'SELECT @@gtid_binlog_pos AS p' : 'SELECT @@gtid_executed AS p';
    const waitSql = (p: string) =>
      mariadb
        ? `SELECT MASTER_GTID_WAIT(${replica.escape(p)}, 1) AS w`
        : `SELECT WAIT_FOR_EXECUTED_GTID_SET(${replica.escape(p)}, 1) AS w`;
    let id = 0;
    console.log(
      `wait-read on ${target} (${cluster.version}), primary + 1 replica, ${reads} reads per variant per run`,
    );
    for (let run = 1; run <= runs; run++) {
      const ms: Record<'two' | 'one', number[]> = { two: [], one: [] };
      const missing = { two: 0, one: 0 };
      for (let i = 0; i < reads * 2; i++) {
        const variant = i % 2 === 0 ? 'two' : 'one';
        id++;
        await primary.query('INSERT INTO wr VALUES (?, ?)', [id, `row ${id}`]);
        const [[row]] = (await primary.query(positionSql)) as unknown as [[{ p: string }]];
        const read = `SELECT v FROM wr WHERE id = ${Number(id)}`;
        const started = performance.now();
        let rows: unknown[];
        if (variant === 'two') {
          await replica.query(waitSql(row.p));
          [rows] = (await replica.query(read)) as unknown as [unknown[]];
        } else {
          const [results] = (await replica.query(`${waitSql(row.p)}; ${read}`)) as unknown as [
            unknown[][],
          ];
          rows = results[1] ?? [];
        }
        ms[variant].push(performance.now() - started);
        if (rows.length !== 1) missing[variant]++;
      }
      const two = ms.two.sort((a, b) => a - b);
      const one = ms.one.sort((a, b) => a - b);
      const line = (name: string, s: number[], miss: number) =>
        `  run ${run} ${name.padEnd(15)} p50 ${quantile(s, 0.5).toFixed(3)} ms  p99 ${quantile(s, 0.99).toFixed(3)} ms  missing ${miss}`;
      console.log(line('wait-then-read', two, missing.two));
      console.log(line('one-message', one, missing.one));
      console.log(
        `  run ${run} ratio one-message/wait-then-read: p50 ${(quantile(one, 0.5) / quantile(two, 0.5)).toFixed(2)}x  p99 ${(quantile(one, 0.99) / quantile(two, 0.99)).toFixed(2)}x`,
      );
    }
    await primary.end();
    await replica.end();
  } finally {
    await cluster.teardown();
  }
}

await main();
