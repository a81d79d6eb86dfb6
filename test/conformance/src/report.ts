import type { ScenarioReport } from './types.js';

/** Counts every line shows first (when the scenario measured them), in this order. */
const LEADING = ['router_misses', 'control_misses', 'fallbacks', 'waits'] as const;

/**
 * One plain line per target and scenario, `key=value` pairs, easy to grep and to diff:
 * `conformance target=pg15 scenario=paused-replay result=pass router_misses=0 ... ms=812`.
 */
export function formatLine(report: ScenarioReport): string {
  const parts = [
    'conformance',
    `target=${report.target}`,
    `scenario=${report.scenario}`,
    `result=${report.result}`,
  ];
  if (report.result === 'not-applicable') {
    parts.push(`needs=${(report.needs ?? []).join(',')}`);
    return parts.join(' ');
  }
  for (const key of LEADING) {
    if (key in report.counts) parts.push(`${key}=${report.counts[key]}`);
  }
  for (const [key, value] of Object.entries(report.counts)) {
    if (!(LEADING as readonly string[]).includes(key)) parts.push(`${key}=${value}`);
  }
  parts.push(`ms=${Math.round(report.ms)}`);
  if (report.error !== undefined) parts.push(`error=${JSON.stringify(report.error)}`);
  return parts.join(' ');
}

/** The failed checks of a report, one per line, for the test failure message. */
export function formatFailures(report: ScenarioReport): string {
  const lines = report.checks.filter((c) => !c.pass).map((c) => `  FAILED ${c.name}: ${c.detail}`);
  if (report.error !== undefined) lines.push(`  ERROR ${report.error}`);
  return lines.join('\n');
}

/** A fixed-width table of every report, printed once at the end of the run. */
export function formatSummary(reports: readonly ScenarioReport[]): string {
  const header = ['target', 'scenario', 'result', ...LEADING, 'ms'];
  const rows = reports.map((r) => [
    r.target,
    r.scenario,
    r.result,
    ...LEADING.map((key) => (key in r.counts ? String(r.counts[key]) : '-')),
    String(Math.round(r.ms)),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const render = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ');
  const passed = reports.filter((r) => r.result === 'pass').length;
  const notApplicable = reports.filter((r) => r.result === 'not-applicable').length;
  const applicable = reports.length - notApplicable;
  return [
    'conformance summary',
    render(header),
    render(widths.map((w) => '-'.repeat(w))),
    ...rows.map(render),
    notApplicable > 0
      ? `${passed}/${applicable} passed, ${notApplicable} NOT APPLICABLE (not passed): ${reports
          .filter((r) => r.result === 'not-applicable')
          .map((r) => `${r.target}/${r.scenario} needs ${(r.needs ?? []).join(',')}`)
          .join('; ')}`
      : `${passed}/${reports.length} passed`,
  ].join('\n');
}
