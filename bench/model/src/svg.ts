/**
 * A hand-written SVG chart (no dependencies): leader reads and stale reads per 1,000 reads
 * against the steady regimes' nominal lag, one line per strategy, the oracles dashed.
 */
import type { ModelResult } from './model.js';
import type { StrategyName } from './strategies.js';

const WIDTH = 790;
const MARGIN = { left: 70, right: 210, top: 84 };
const PANEL_HEIGHT = 200;
const PANEL_GAP = 70;
const PLOT_WIDTH = WIDTH - MARGIN.left - MARGIN.right;
/** Log x axis from 0.7 ms to 45 s, so 1 ms and 30 s sit inside the frame. */
const X_MIN = Math.log10(0.7);
const X_MAX = Math.log10(45_000);
const X_TICKS: ReadonlyArray<[number, string]> = [
  [1, '1 ms'],
  [10, '10 ms'],
  [100, '100 ms'],
  [1_000, '1 s'],
  [5_000, '5 s'],
  [30_000, '30 s'],
];

interface Series {
  readonly label: string;
  readonly color: string;
  readonly dash?: string;
  readonly points: ReadonlyArray<[number, number]>;
  /** Text next to a point: (lag, value, text). */
  readonly notes?: ReadonlyArray<[number, number, string]>;
}

const STYLE: Record<StrategyName, { color: string }> = {
  tidemark: { color: '#1f6feb' },
  'tidemark-no-lag-bound': { color: '#16a34a' },
  'window-2s': { color: '#d97706' },
  naive: { color: '#6b7280' },
};

export interface ChartCaption {
  readonly title: string;
  readonly subtitle: string;
}

export function leaderVsLagSvg(results: readonly ModelResult[], caption: ChartCaption): string {
  const steady = results.filter((r) => r.lag_ms !== null);
  const byStrategy = (name: StrategyName, pick: (r: ModelResult) => number) =>
    steady
      .filter((r) => r.strategy === name)
      .map((r): [number, number] => [r.lag_ms!, pick(r)])
      .sort((a, b) => a[0] - b[0]);
  const strategies = (['tidemark', 'tidemark-no-lag-bound', 'window-2s', 'naive'] as const).filter(
    (name) => steady.some((r) => r.strategy === name),
  );
  // The oracles depend on the workload and the cluster, not on the strategy: take any run's.
  const oracleSource = strategies[0];
  const leaderSeries: Series[] = strategies.map((name) => ({
    label: name,
    color: STYLE[name].color,
    points: byStrategy(name, (r) => r.leader_per_1k),
    // Reads refused (fallback cap) went nowhere: say so where the line is lower for it.
    notes: steady
      .filter((r) => r.strategy === name && r.errors > 0)
      .map((r): [number, number, string] => [
        r.lag_ms!,
        r.leader_per_1k,
        `+${Math.round((r.errors * 1000) / r.reads)}/1k refused`,
      ]),
  }));
  if (oracleSource) {
    const per1k = (r: ModelResult, count: number) => (r.reads === 0 ? 0 : (count * 1000) / r.reads);
    leaderSeries.push(
      {
        label: 'oracle',
        color: '#111827',
        dash: '6 4',
        points: byStrategy(oracleSource, (r) => r.oracle_per_1k),
      },
      {
        label: 'oracle, 10 s lag limit',
        color: '#111827',
        dash: '2 3',
        points: byStrategy(oracleSource, (r) => per1k(r, r.policy_oracle_leader_reads)),
      },
    );
  }
  const staleSeries: Series[] = strategies.map((name) => ({
    label: name,
    color: STYLE[name].color,
    points: byStrategy(name, (r) => (r.reads === 0 ? 0 : (r.stale_reads * 1000) / r.reads)),
  }));
  const height = MARGIN.top + 2 * PANEL_HEIGHT + PANEL_GAP + 50;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12" role="img">`,
    `<title>${escapeXml(caption.title)}</title>`,
    `<desc>${escapeXml(caption.subtitle)}</desc>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${MARGIN.left}" y="24" font-size="15" font-weight="bold">${escapeXml(caption.title)}</text>`,
    `<text x="${MARGIN.left}" y="42" fill="#374151">${escapeXml(caption.subtitle)}</text>`,
    panel(MARGIN.top, 'Leader (primary) reads per 1,000 reads', leaderSeries),
    panel(
      MARGIN.top + PANEL_HEIGHT + PANEL_GAP,
      'Stale reads per 1,000 reads (the session misses its own write)',
      staleSeries,
    ),
    `<text x="${MARGIN.left + PLOT_WIDTH / 2}" y="${height - 12}" text-anchor="middle">replica lag (log scale; steady regimes)</text>`,
    '</svg>',
  ];
  return `${parts.join('\n')}\n`;
}

function panel(top: number, title: string, series: readonly Series[]): string {
  const maxValue = Math.max(1, ...series.flatMap((s) => s.points.map(([, y]) => y)));
  const yMax = niceCeiling(maxValue);
  const x = (lagMs: number) =>
    MARGIN.left + ((Math.log10(lagMs) - X_MIN) / (X_MAX - X_MIN)) * PLOT_WIDTH;
  const y = (value: number) => top + PANEL_HEIGHT - (value / yMax) * PANEL_HEIGHT;
  const out: string[] = [
    `<text x="${MARGIN.left}" y="${top - 10}" font-weight="bold">${escapeXml(title)}</text>`,
    `<rect x="${MARGIN.left}" y="${top}" width="${PLOT_WIDTH}" height="${PANEL_HEIGHT}" fill="none" stroke="#9ca3af"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const value = (yMax * i) / 4;
    const at = round(y(value));
    out.push(
      `<line x1="${MARGIN.left}" y1="${at}" x2="${MARGIN.left + PLOT_WIDTH}" y2="${at}" stroke="#e5e7eb"/>`,
      `<text x="${MARGIN.left - 6}" y="${at + 4}" text-anchor="end">${formatValue(value)}</text>`,
    );
  }
  for (const [lagMs, label] of X_TICKS) {
    const at = round(x(lagMs));
    out.push(
      `<line x1="${at}" y1="${top}" x2="${at}" y2="${top + PANEL_HEIGHT}" stroke="#f3f4f6"/>`,
      `<text x="${at}" y="${top + PANEL_HEIGHT + 16}" text-anchor="middle">${label}</text>`,
    );
  }
  // Dashed lines (the oracles) first, so the strategies' lines stay visible on top of them.
  const drawOrder = [...series].sort((a, b) => Number(!a.dash) - Number(!b.dash));
  for (const s of drawOrder) {
    if (s.points.length === 0) continue;
    const path = s.points.map(([lag, v]) => `${round(x(lag))},${round(y(v))}`).join(' ');
    const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : '';
    out.push(
      `<polyline points="${path}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`,
    );
    if (!s.dash) {
      for (const [lag, v] of s.points) {
        out.push(`<circle cx="${round(x(lag))}" cy="${round(y(v))}" r="3" fill="${s.color}"/>`);
      }
    }
    for (const [lag, v, text] of s.notes ?? []) {
      out.push(
        `<text x="${round(x(lag) - 40)}" y="${round(y(v) + 12)}" text-anchor="end" fill="${s.color}">${escapeXml(text)}</text>`,
      );
    }
  }
  series.forEach((s, i) => {
    const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : '';
    const legendY = top + 14 + i * 18;
    const legendX = MARGIN.left + PLOT_WIDTH + 14;
    out.push(
      `<line x1="${legendX}" y1="${legendY - 4}" x2="${legendX + 24}" y2="${legendY - 4}" stroke="${s.color}" stroke-width="2"${dash}/>`,
      `<text x="${legendX + 30}" y="${legendY}">${escapeXml(s.label)}</text>`,
    );
  });
  return out.join('\n');
}

function niceCeiling(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * magnitude >= value) return step * magnitude;
  }
  return 10 * magnitude;
}

function formatValue(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
