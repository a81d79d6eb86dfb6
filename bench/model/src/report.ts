/** Output of the model: JSON lines, a plain-text table, a Markdown table. */
import type { ModelResult } from './model.js';

/** One JSON object per line, nothing else. */
export function jsonLines(results: readonly ModelResult[]): string {
  return results.map((result) => JSON.stringify(result)).join('\n');
}

interface Column {
  readonly title: string;
  readonly align: 'left' | 'right';
  readonly value: (result: ModelResult) => string;
}

const COLUMNS: readonly Column[] = [
  { title: 'regime', align: 'left', value: (r) => r.regime },
  { title: 'strategy', align: 'left', value: (r) => r.strategy },
  { title: 'reads', align: 'right', value: (r) => count(r.reads) },
  { title: 'leader', align: 'right', value: (r) => count(r.leader_reads) },
  { title: 'oracle', align: 'right', value: (r) => count(r.oracle_leader_reads) },
  {
    title: 'leader/oracle',
    align: 'right',
    value: (r) => (r.leader_vs_oracle === null ? 'n/a' : `${r.leader_vs_oracle.toFixed(3)}`),
  },
  { title: 'avoidable', align: 'right', value: (r) => count(r.avoidable_leader_reads) },
  {
    title: 'leader/policy',
    align: 'right',
    value: (r) =>
      r.leader_vs_policy_oracle === null ? 'n/a' : `${r.leader_vs_policy_oracle.toFixed(3)}`,
  },
  { title: 'primary %', align: 'right', value: (r) => (r.primary_share * 100).toFixed(2) },
  { title: 'waits', align: 'right', value: (r) => count(r.waits) },
  {
    title: 'wait p50/p99 ms',
    align: 'right',
    value: (r) => (r.wait_p50_ms === null ? '-' : `${ms(r.wait_p50_ms)}/${ms(r.wait_p99_ms)}`),
  },
  { title: 'stale', align: 'right', value: (r) => count(r.stale_reads) },
  {
    title: 'errors (cap)',
    align: 'right',
    value: (r) => `${count(r.errors)} (${count(r.cap_rejections)})`,
  },
  { title: 'target', align: 'left', value: (r) => targetNote(r) },
];

/** Why the target is met or not, in a few words. */
export function targetNote(result: ModelResult): string {
  if (result.target_met) return 'met';
  const reasons: string[] = [];
  if (result.stale_reads > 0) reasons.push('stale reads');
  if (result.errors > 0) reasons.push('errors');
  const over =
    result.leader_vs_oracle === null ? result.leader_per_1k > 1 : result.leader_vs_oracle > 1.05;
  if (over) {
    reasons.push(
      result.leader_vs_oracle === null
        ? `leader ${result.leader_per_1k.toFixed(1)}/1k, oracle 0`
        : `leader ${result.leader_vs_oracle.toFixed(2)}x oracle`,
    );
  }
  return `missed: ${reasons.join(', ')}`;
}

function count(value: number): string {
  return value.toLocaleString('en-US');
}

function ms(value: number | null): string {
  if (value === null) return '-';
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

function cells(results: readonly ModelResult[]): string[][] {
  return [COLUMNS.map((c) => c.title), ...results.map((r) => COLUMNS.map((c) => c.value(r)))];
}

/** Fixed-width text table, a blank line between regimes. */
export function textTable(results: readonly ModelResult[]): string {
  const rows = cells(results);
  const widths = COLUMNS.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) =>
        COLUMNS[i]!.align === 'left' ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!),
      )
      .join('  ')
      .trimEnd();
  const out = [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  ')];
  rows.slice(1).forEach((row, i) => {
    if (i > 0 && results[i]!.regime !== results[i - 1]!.regime) out.push('');
    out.push(line(row));
  });
  return out.join('\n');
}

/** The same table in Markdown (for the README). */
export function markdownTable(results: readonly ModelResult[]): string {
  const rows = cells(results);
  const out = [
    `| ${rows[0]!.join(' | ')} |`,
    `|${COLUMNS.map((c) => (c.align === 'left' ? '---' : '---:')).join('|')}|`,
  ];
  for (const row of rows.slice(1)) out.push(`| ${row.join(' | ')} |`);
  return out.join('\n');
}
