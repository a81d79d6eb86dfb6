import { RESULT_FIELDS, type RunResult, SHADOW_FIELDS } from './result.js';

/** The run's fields in documented order: the shadow strategy's predictions after the rest. */
function fields(result: RunResult): Array<[string, unknown]> {
  const entries: Array<[string, unknown]> = RESULT_FIELDS.map((field) => [field, result[field]]);
  if (result.via) entries.push(['via', result.via]);
  const shadow = result.shadow;
  if (shadow) for (const field of SHADOW_FIELDS) entries.push([field, shadow[field]]);
  return entries;
}

/** `key=value` line of one run, fields in documented order; `-` stands for "no samples". */
export function formatLine(result: RunResult): string {
  return fields(result)
    .map(([field, value]) => `${field}=${value ?? '-'}`)
    .join(' ');
}

/** One JSON object (one line) of one run, fields in documented order. */
export function formatJson(result: RunResult): string {
  return JSON.stringify(Object.fromEntries(fields(result)));
}

/**
 * Shadow mode's predictions next to what the real strategies measured on the same scenario:
 * one block per scenario that ran shadow; empty when none did.
 */
export function formatShadowComparison(results: readonly RunResult[]): string {
  const lines: string[] = [];
  for (const shadowRun of results) {
    const shadow = shadowRun.shadow;
    if (!shadow) continue;
    const measured = (strategy: string) =>
      results.find((r) => r.scenario === shadowRun.scenario && r.strategy === strategy);
    const naive = measured('naive');
    const tidemark = measured('tidemark');
    const or = (value: number | null | undefined) => (value == null ? 'not run' : String(value));
    lines.push(
      `shadow mode, ${shadowRun.scenario}: predicted (all ${shadowRun.reads} reads served by the primary) vs measured`,
      `  naive    missing ${shadow.predicted_naive_missing} vs ${or(naive?.missing_in_list)}, after write ${shadow.predicted_naive_missing_after_write} vs ${or(naive?.missing_after_write)}`,
      `  tidemark replica ${shadow.predicted_replica_reads} vs ${or(tidemark?.replica_reads)}, primary ${shadow.predicted_primary_reads} vs ${or(tidemark?.primary_reads)}, waits ${shadow.predicted_waits} vs ${or(tidemark?.waits)}, errors ${shadow.predicted_errors} vs ${or(tidemark?.errors)}`,
    );
  }
  return lines.join('\n');
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
