import { RESULT_FIELDS, type RunResult } from './result.js';

/** `key=value` line of one run, fields in documented order; `-` stands for "no samples". */
export function formatLine(result: RunResult): string {
  return RESULT_FIELDS.map((field) => `${field}=${result[field] ?? '-'}`).join(' ');
}

/** One JSON object (one line) of one run, fields in documented order. */
export function formatJson(result: RunResult): string {
  const ordered: Record<string, unknown> = {};
  for (const field of RESULT_FIELDS) ordered[field] = result[field];
  return JSON.stringify(ordered);
}

/** The human summary: one row per run, aligned columns. */
export function formatSummary(results: readonly RunResult[]): string {
  const header = [
    'scenario',
    'strategy',
    'missing/checked',
    'after write',
    'primary reads',
    'errors',
    'waits',
    'wait p50',
    'read p50',
    'read p99',
  ];
  const rows = results.map((r) => [
    r.scenario,
    r.strategy,
    `${r.missing_in_list}/${r.checked_reads}`,
    `${r.missing_after_write}/${r.orders}`,
    `${r.primary_reads} (${percent(r.primary_reads, r.reads)})`,
    String(r.errors),
    String(r.waits),
    ms(r.wait_ms_p50),
    ms(r.read_ms_p50),
    ms(r.read_ms_p99),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const render = (cells: string[]) =>
    cells
      .map((cell, column) =>
        column < 2 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!),
      )
      .join('  ')
      .trimEnd();
  return [render(header), ...rows.map(render)].join('\n');
}

function percent(part: number, whole: number): string {
  if (whole === 0) return '-';
  return `${((100 * part) / whole).toFixed(1)}%`;
}

function ms(value: number | null): string {
  return value === null ? '-' : `${value.toFixed(2)} ms`;
}
