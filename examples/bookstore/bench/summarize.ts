/**
 * Summarise several `pnpm -s bench:e2e --json` runs as one Markdown table of spreads (min-max
 * over the runs) per row: `tsx bench/summarize.ts run1.jsonl run2.jsonl run3.jsonl`. Lines that
 * are not JSON (a package manager's banner) are skipped.
 */
import { readFileSync } from 'node:fs';

type Json = Record<string, unknown>;

function rowsOf(file: string): Json[] {
  const rows: Json[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    const parsed = JSON.parse(line) as Json;
    if (parsed['kind'] === 'row') rows.push(parsed);
  }
  return rows;
}

const key = (row: Json) => `${row['cell']}|${row['variant']}|${row['concurrency']}`;

function spread(values: readonly (number | undefined)[], digits: number, percent = false): string {
  const finite = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (finite.length === 0) return '-';
  const show = (v: number) => (percent ? `${(v * 100).toFixed(digits)}%` : v.toFixed(digits));
  const low = Math.min(...finite);
  const high = Math.max(...finite);
  return low === high ? show(low) : `${show(low)}-${show(high)}`;
}

function num(row: Json, field: string): number | undefined {
  const value = row[field];
  return typeof value === 'number' ? value : undefined;
}

function sub(row: Json, field: string, id: string): number | undefined {
  const value = row[field];
  if (value && typeof value === 'object') {
    const inner = (value as Record<string, unknown>)[id];
    return typeof inner === 'number' ? inner : undefined;
  }
  return undefined;
}

/** The cell-specific columns that matter for each kind of row. */
function details(rows: readonly Json[]): string {
  const first = rows[0]!;
  const all = (field: string, digits = 2, percent = false) =>
    spread(
      rows.map((r) => num(r, field)),
      digits,
      percent,
    );
  const parts: string[] = [];
  const cell = String(first['cell']);
  const variant = String(first['variant']);
  if (cell === 'probes-idle') {
    parts.push(
      `probes/s per replica ${spread(
        rows.map((r) => sub(r, 'probes_per_s', 'n1')),
        1,
      )}`,
    );
  }
  if (cell === 'reads' && variant !== 'raw') {
    parts.push(`round trips/read ${all('rt_per_read')}`);
    parts.push(
      `n1 share ${spread(
        rows.map((r) => sub(r, 'share', 'n1') ?? 0),
        0,
        true,
      )}`,
    );
  }
  if (cell === 'writes') parts.push(`round trips/write ${all('rt_per_write')}`);
  if (cell === 'writes-server') {
    parts.push(
      `${all('server_per_write')} statements per write logged by the server (log_statement=all) vs ${all('rt_per_write')} counted by the adapter`,
    );
  }
  if (cell.startsWith('bookstore')) {
    parts.push(`missing own ${all('missing_own', 0)} of ${all('own_checked', 0)}`);
    if (variant !== 'raw') {
      parts.push(`errors ${all('errors', 0)}`);
      parts.push(`primary ${all('primary_share', 1, true)}`);
      if (cell === 'bookstore') {
        parts.push(
          `waits ${all('waits', 0)}, wait p50 ${all('wait_p50_ms')} p99 ${all('wait_p99_ms', 1)} ms`,
        );
        parts.push(
          `n1 share ${spread(
            rows.map((r) => sub(r, 'share', 'n1') ?? 0),
            0,
            true,
          )}`,
        );
        parts.push(
          `probes/s per replica ${spread(
            rows.flatMap((r) => [sub(r, 'probes_per_s', 'n1'), sub(r, 'probes_per_s', 'n2')]),
            0,
          )}`,
        );
      }
    }
    if (cell === 'bookstore')
      parts.push(`replay lag p50 ${all('lag_p50_ms')} p99 ${all('lag_p99_ms', 1)} ms`);
  }
  return parts.join('; ');
}

const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write('usage: tsx bench/summarize.ts run1.jsonl [run2.jsonl ...]\n');
  process.exit(2);
}
const runs = files.map(rowsOf);
const order: string[] = [];
const byKey = new Map<string, Json[]>();
for (const rows of runs) {
  for (const row of rows) {
    const k = key(row);
    if (!byKey.has(k)) {
      byKey.set(k, []);
      order.push(k);
    }
    byKey.get(k)!.push(row);
  }
}
const lines = [
  `| cell | variant | conc | ops/s | p50 ms | p99 ms | x ops | x p50 | notes (${files.length} runs, min-max) |`,
  '|---|---|---:|---:|---:|---:|---:|---:|---|',
];
for (const k of order) {
  const rows = byKey.get(k)!;
  const first = rows[0]!;
  const all = (field: string, digits: number) =>
    spread(
      rows.map((r) => num(r, field)),
      digits,
    );
  const idle = first['cell'] === 'probes-idle' || first['cell'] === 'writes-server';
  lines.push(
    `| ${first['cell']} | ${first['variant']} | ${first['concurrency']} | ${idle ? '-' : all('ops_per_s', 0)} | ${all('p50_ms', 2)} | ${all('p99_ms', 1)} | ${all('ratio_ops', 2)} | ${all('ratio_p50', 2)} | ${details(rows)} |`,
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
