import type { ScenarioName, StrategyName } from '../options.js';
import { formatJson } from '../report.js';
import type { RunResult, ShadowCounts } from '../result.js';
import type { ReadOutcome, ReportData, ReportReplicaState, ReportRun } from './model.js';
import {
  decades,
  esc,
  line,
  linearScale,
  logScale,
  msLabel,
  n,
  niceTicks,
  polyline,
  rect,
  type Scale,
  text,
  trim,
} from './svg.js';

/**
 * The demo's HTML report: one self-contained file of hand-written SVG and inline CSS, with no
 * executable script (one inert JSON block carries the layout) and no external asset. The charts
 * sit at fixed positions ({@link layoutReport}) so a test can find each one in a screenshot.
 */

/** Strategy colours (the legend of every chart that draws strategies). */
export const STRATEGY_COLOURS: Readonly<Record<StrategyName, string>> = {
  naive: '#d62728',
  'time-window': '#ff7f0e',
  'lab-router': '#9467bd',
  tidemark: '#1f77b4',
  shadow: '#8c564b',
};

/** Route outcome colours of the timeline. */
export const OUTCOME_COLOURS: Readonly<Record<ReadOutcome, string>> = {
  replica: '#2ca02c',
  replica_waited: '#17becf',
  primary: '#e377c2',
  primary_fallback: '#e377c2',
  degraded_stale: '#bcbd22',
  shadow: '#8c564b',
  error: '#000000',
};

/** The timeline's replica lines: staleness against the primary, and the replica's own report. */
export const LAG_COLOURS = { staleness: '#393b79', lag: '#8c6d31' } as const;

/** Shadow chart: predicted bars; measured bars take the measured strategy's colour. */
export const PREDICTED_COLOUR = STRATEGY_COLOURS.shadow;

export const PAGE = { padding: 20, width: 1160, header: 112, gap: 28 } as const;

const INK = '#222222';
const MUTED = '#666666';
const GRID = '#e3e3e3';
const TRACK = '#f0f0f0';
const PAUSED_BAND = '#fff1c1';

export type ChartId = 'outcomes' | 'latency' | 'timeline' | 'shadow';

/** A rectangle in CSS pixels. */
export interface Box {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** Where one data area of a chart is: only marks are drawn inside it (no legend, no labels). */
export interface PlotBox extends Box {
  /** e.g. `paused/primary share`, `idle`, `paused/tidemark/reads`. */
  readonly key: string;
}

export interface ChartLayout extends Box {
  readonly id: ChartId;
  readonly plots: readonly PlotBox[];
}

interface Chart {
  readonly id: ChartId;
  readonly height: number;
  /** Relative to the chart's top left corner. */
  readonly plots: PlotBox[];
  readonly body: string;
}

/** Page coordinates of every chart and of its data areas, as {@link renderReport} draws them. */
export function layoutReport(data: ReportData): ChartLayout[] {
  return place(buildCharts(data)).map(({ chart, top }) => ({
    id: chart.id,
    x: PAGE.padding,
    y: top,
    width: PAGE.width,
    height: chart.height,
    plots: chart.plots.map((p) => ({ ...p, x: p.x + PAGE.padding, y: p.y + top })),
  }));
}

/** Id of the inert JSON block that carries {@link layoutReport}'s result inside the page. */
export const LAYOUT_ELEMENT_ID = 'tidemark-report-layout';

export function renderReport(data: ReportData): string {
  const placed = place(buildCharts(data));
  const layout = JSON.stringify(layoutReport(data)).replace(/</g, '\\u003c');
  const last = placed.at(-1);
  const chartsHeight = last ? last.top + last.chart.height - PAGE.padding - PAGE.header : 0;
  const svgs = placed
    .map(
      ({ chart, top }) =>
        `<svg id="chart-${chart.id}" class="chart" style="top:${top - PAGE.padding - PAGE.header}px" width="${PAGE.width}" height="${chart.height}" viewBox="0 0 ${PAGE.width} ${chart.height}" role="img">${chart.body}</svg>`,
    )
    .join('\n');
  const { meta } = data;
  const via = meta.via ? `, queries through ${meta.via}` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Tidemark Bookstore demo report (${esc(meta.db)})</title>
<style>
  html, body { margin: 0; background: #ffffff; color: ${INK}; }
  body { padding: ${PAGE.padding}px; width: ${PAGE.width}px; font: 13px/1.45 system-ui, sans-serif; }
  header { height: ${PAGE.header}px; overflow: hidden; }
  h1 { font-size: 20px; margin: 0 0 6px; }
  header p { margin: 0; color: ${MUTED}; }
  #charts { position: relative; height: ${chartsHeight}px; }
  svg.chart { position: absolute; left: 0; font-family: system-ui, sans-serif; }
  section { margin-top: ${PAGE.gap}px; }
  h2 { font-size: 16px; margin: 0 0 8px; }
  table { border-collapse: collapse; font: 12px/1.3 ui-monospace, monospace; }
  th, td { border-bottom: 1px solid ${GRID}; padding: 3px 8px; text-align: right; white-space: nowrap; }
  th { position: sticky; top: 0; background: #fafafa; }
  td.name, th.name { text-align: left; }
  .scroll { overflow-x: auto; }
  pre { background: #fafafa; padding: 8px; font-size: 12px; white-space: pre-wrap; }
</style>
</head>
<body>
<header>
<h1>Tidemark Bookstore demo: read your own orders from a replica</h1>
<p>${esc(meta.cluster)}</p>
<p>database ${esc(meta.db)}${esc(via)}; ${meta.customers} customers, seed ${meta.seed}; tidemark wait budget ${meta.waitBudgetMs === 'auto' ? 'auto' : `${meta.waitBudgetMs} ms`}; made ${esc(meta.generatedAt)}</p>
</header>
<div id="charts">
${svgs}
</div>
${numbersTable(data.runs.map((run) => run.result))}
${data.notes.length > 0 ? `<section><h2>Notes</h2><pre>${esc(data.notes.join('\n\n'))}</pre></section>` : ''}
<script type="application/json" id="${LAYOUT_ELEMENT_ID}">${layout}</script>
</body>
</html>
`;
}

function place(charts: Chart[]): Array<{ chart: Chart; top: number }> {
  let top = PAGE.padding + PAGE.header;
  return charts.map((chart) => {
    const placed = { chart, top };
    top += chart.height + PAGE.gap;
    return placed;
  });
}

function buildCharts(data: ReportData): Chart[] {
  const charts = [outcomesChart(data.runs), latencyChart(data.runs), timelineChart(data.runs)];
  const shadow = shadowChart(data.runs);
  if (shadow) charts.push(shadow);
  return charts;
}

// --- helpers ---------------------------------------------------------------------------------

function scenariosOf(runs: readonly ReportRun[]): ScenarioName[] {
  return [...new Set(runs.map((run) => run.result.scenario))];
}

function label(result: RunResult): string {
  return result.via ? `${result.strategy} via ${result.via}` : result.strategy;
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '-' : `${((100 * part) / whole).toFixed(1)}%`;
}

function heading(title: string, subtitle: string): string {
  return (
    text(0, 18, title, { 'font-size': 16, 'font-weight': 600, fill: INK }) +
    text(0, 38, subtitle, { 'font-size': 12, fill: MUTED })
  );
}

/** Swatches in one row at `y`; returns the markup. */
function legend(y: number, entries: ReadonlyArray<readonly [string, string]>): string {
  let x = 0;
  let out = '';
  for (const [name, colour] of entries) {
    out += rect(x, y - 10, 12, 12, { fill: colour });
    out += text(x + 17, y, name, { 'font-size': 12, fill: INK });
    x += 34 + name.length * 7;
  }
  return out;
}

/** A light full-width track with a bar of `share` (0..1) of its width on it. */
function trackedBar(
  x: number,
  y: number,
  width: number,
  height: number,
  share: number,
  colour: string,
  title: string,
): string {
  return (
    rect(x, y, width, height, { fill: TRACK }) +
    rect(x, y, width * share, height, { fill: colour, 'shape-rendering': 'crispEdges' }, title)
  );
}

// --- 1. where reads went, what they missed -------------------------------------------------

const ROW = 22;
const BAR = 14;
const LABEL_WIDTH = 190;
const BAR_WIDTH = 200;

const METRICS: ReadonlyArray<{
  key: string;
  title: string;
  part: (r: RunResult) => number;
  whole: (r: RunResult) => number;
  wholeName: string;
}> = [
  {
    key: 'primary share',
    title: 'reads served by the primary',
    part: (r) => r.primary_reads,
    whole: (r) => r.reads,
    wholeName: 'reads',
  },
  {
    key: 'missing_in_list',
    title: 'missing_in_list (of checked reads)',
    part: (r) => r.missing_in_list,
    whole: (r) => r.checked_reads,
    wholeName: 'checked',
  },
  {
    key: 'missing_after_write',
    title: "missing_after_write (writer's next read)",
    part: (r) => r.missing_after_write,
    whole: (r) => r.orders,
    wholeName: 'orders',
  },
];

function outcomesChart(runs: readonly ReportRun[]): Chart {
  const plots: PlotBox[] = [];
  let body = heading(
    'Primary share and missed own writes, per strategy and scenario',
    'Bars: share of each run; numbers: count / base. A correct strategy misses nothing; a cheap one reads the primary rarely.',
  );
  const columnWidth = (PAGE.width - LABEL_WIDTH) / METRICS.length;
  let y = 56;
  for (const scenario of scenariosOf(runs)) {
    const rows = runs.filter((run) => run.result.scenario === scenario).map((run) => run.result);
    const first = rows[0];
    const reads = first ? `${first.orders} orders, ${first.reads} reads per run` : '';
    body += text(0, y + 14, `${scenario}: ${reads}`, {
      'font-size': 13,
      'font-weight': 600,
      fill: INK,
    });
    y += 22;
    METRICS.forEach((metric, column) => {
      body += text(LABEL_WIDTH + column * columnWidth, y + 12, metric.title, {
        'font-size': 12,
        fill: MUTED,
      });
    });
    y += 18;
    METRICS.forEach((metric, column) => {
      plots.push({
        key: `${scenario}/${metric.key}`,
        x: LABEL_WIDTH + column * columnWidth,
        y,
        width: BAR_WIDTH,
        height: rows.length * ROW,
      });
    });
    for (const [index, result] of rows.entries()) {
      const rowY = y + index * ROW;
      body += text(0, rowY + 15, label(result), { 'font-size': 12, fill: INK });
      METRICS.forEach((metric, column) => {
        const x = LABEL_WIDTH + column * columnWidth;
        const part = metric.part(result);
        const whole = metric.whole(result);
        const share = whole === 0 ? 0 : part / whole;
        const tip = `${scenario} / ${label(result)}: ${metric.key} ${part} of ${whole} ${metric.wholeName} (${percent(part, whole)})`;
        body += trackedBar(
          x,
          rowY + 4,
          BAR_WIDTH,
          BAR,
          share,
          STRATEGY_COLOURS[result.strategy],
          tip,
        );
        body += text(x + BAR_WIDTH + 6, rowY + 15, `${part}/${whole} ${percent(part, whole)}`, {
          'font-size': 11,
          fill: INK,
        });
      });
    }
    y += rows.length * ROW + 14;
  }
  return { id: 'outcomes', height: y, plots, body };
}

// --- 2. read latency distribution ---------------------------------------------------------

const LATENCY_PANEL = { height: 300, left: 52, right: 26, top: 26, bottom: 40 } as const;
const CDF_POINTS = 400;

function latencyChart(runs: readonly ReportRun[]): Chart {
  const scenarios = scenariosOf(runs);
  const plots: PlotBox[] = [];
  let body = heading(
    'Read latency distribution per strategy (CDF)',
    'Share of reads (y) that finished within a latency (x, log scale), as the application saw it: routing, any wait, the query.',
  );
  const gap = 24;
  const panelWidth = (PAGE.width - gap * Math.max(0, scenarios.length - 1)) / scenarios.length;
  const top = 50;
  scenarios.forEach((scenario, index) => {
    const left = index * (panelWidth + gap);
    const box = {
      key: scenario,
      x: left + LATENCY_PANEL.left,
      y: top + LATENCY_PANEL.top,
      width: panelWidth - LATENCY_PANEL.left - LATENCY_PANEL.right,
      height: LATENCY_PANEL.height - LATENCY_PANEL.top - LATENCY_PANEL.bottom,
    };
    plots.push(box);
    body += text(left, top + 14, scenario, { 'font-size': 13, 'font-weight': 600, fill: INK });
    const series = runs
      .filter((run) => run.result.scenario === scenario)
      .map((run) => ({
        result: run.result,
        sorted: run.reads
          .map((read) => read.ms)
          .filter((ms): ms is number => ms !== undefined && ms > 0)
          .sort((a, b) => a - b),
      }));
    const all = series.flatMap((s) => s.sorted);
    if (all.length === 0) {
      body += text(box.x + 8, box.y + 20, 'no read latencies recorded', {
        'font-size': 12,
        fill: MUTED,
      });
      return;
    }
    const { lo, hi, ticks } = decades(Math.min(...all), Math.max(...all));
    const x = logScale(lo, hi, box.x, box.x + box.width);
    const y = linearScale(0, 1, box.y + box.height, box.y);
    body += axes(box, ticks, x, msLabel, [0, 0.25, 0.5, 0.75, 1], y, (v) => `${v * 100}%`);
    body += text(box.x + box.width / 2, box.y + box.height + 32, 'read latency', {
      'font-size': 11,
      fill: MUTED,
      'text-anchor': 'middle',
    });
    for (const { result, sorted } of series) {
      if (sorted.length === 0) continue;
      const step = Math.max(1, Math.floor(sorted.length / CDF_POINTS));
      const points: Array<[number, number]> = [];
      for (let i = 0; i < sorted.length; i += step) {
        points.push([x(sorted[i]!), y((i + 1) / sorted.length)]);
      }
      points.push([x(sorted.at(-1)!), y(1)]);
      const p50 = sorted[Math.ceil(0.5 * sorted.length) - 1]!;
      const p99 = sorted[Math.ceil(0.99 * sorted.length) - 1]!;
      body += polyline(
        points,
        { stroke: STRATEGY_COLOURS[result.strategy], 'stroke-width': 2 },
        `${scenario} / ${label(result)}: ${sorted.length} reads, p50 ${trim(p50)} ms, p99 ${trim(p99)} ms, max ${trim(sorted.at(-1)!)} ms`,
      );
    }
  });
  const height = top + LATENCY_PANEL.height + 10;
  body += legend(height, strategyLegend(runs));
  return { id: 'latency', height: height + 12, plots, body };
}

function strategyLegend(runs: readonly ReportRun[]): Array<[string, string]> {
  const seen = new Map<string, string>();
  for (const { result } of runs) seen.set(label(result), STRATEGY_COLOURS[result.strategy]);
  return [...seen];
}

/** Grid, ticks and labels of one plot box. */
function axes(
  box: Box,
  xTicks: readonly number[],
  x: Scale,
  xLabel: (v: number) => string,
  yTicks: readonly number[],
  y: Scale,
  yLabel: (v: number) => string,
): string {
  let out = '';
  for (const tick of xTicks) {
    const px = x(tick);
    out += line(px, box.y, px, box.y + box.height, { stroke: GRID });
    out += text(px, box.y + box.height + 14, xLabel(tick), {
      'font-size': 11,
      fill: MUTED,
      'text-anchor': 'middle',
    });
  }
  for (const tick of yTicks) {
    const py = y(tick);
    out += line(box.x, py, box.x + box.width, py, { stroke: GRID });
    out += text(box.x - 6, py + 4, yLabel(tick), {
      'font-size': 11,
      fill: MUTED,
      'text-anchor': 'end',
    });
  }
  out += rect(box.x, box.y, box.width, box.height, { fill: 'none', stroke: '#bbbbbb' });
  return out;
}

// --- 3. replica lag vs route outcomes over time ------------------------------------------

const TIMELINE = { lagHeight: 120, readsHeight: 210, left: 60, right: 14, between: 14 } as const;

/** The tidemark runs, paused first: the scenario where lag and fallbacks show. */
function timelineRuns(runs: readonly ReportRun[]): ReportRun[] {
  const tidemark = runs.filter((run) => run.result.strategy === 'tidemark');
  return [
    ...tidemark.filter((run) => run.result.scenario === 'paused'),
    ...tidemark.filter((run) => run.result.scenario !== 'paused'),
  ];
}

function timelineChart(runs: readonly ReportRun[]): Chart {
  const plots: PlotBox[] = [];
  let body = heading(
    "Replica lag and where tidemark's reads went, over time",
    'Top: how far the replica trails (router "replica-state" events as dots, and as judged at each read). Bottom: each read at its start time and latency, by route outcome.',
  );
  let top = 50;
  const selected = timelineRuns(runs);
  if (selected.length === 0) {
    body += text(0, top + 16, 'tidemark did not run (--strategy): no timeline.', {
      'font-size': 12,
      fill: MUTED,
    });
    return { id: 'timeline', height: top + 30, plots, body };
  }
  for (const run of selected) {
    const { result } = run;
    const title =
      result.scenario === 'paused'
        ? `paused: ${label(result)}, the replica not applying for the whole run`
        : `${result.scenario}: ${label(result)}, replication running`;
    body += text(0, top + 14, title, { 'font-size': 13, 'font-weight': 600, fill: INK });
    top += 24;
    const end = Math.max(
      result.duration_s,
      ...run.reads.map((r) => r.at),
      ...run.replica.map((s) => s.at),
      0.001,
    );
    const lagBox: PlotBox = {
      key: `${result.scenario}/${result.strategy}/lag`,
      x: TIMELINE.left,
      y: top,
      width: PAGE.width - TIMELINE.left - TIMELINE.right,
      height: TIMELINE.lagHeight,
    };
    const readsBox: PlotBox = {
      key: `${result.scenario}/${result.strategy}/reads`,
      x: TIMELINE.left,
      y: top + TIMELINE.lagHeight + TIMELINE.between,
      width: lagBox.width,
      height: TIMELINE.readsHeight,
    };
    plots.push(lagBox, readsBox);
    const x = linearScale(0, end, lagBox.x, lagBox.x + lagBox.width);
    const timeTicks = niceTicks(end, 10).filter((t) => t <= end * 1.0001);
    body += lagPlot(run.replica, lagBox, x, timeTicks, end);
    body += readsPlot(run, readsBox, x, timeTicks);
    top = readsBox.y + readsBox.height + 40;
    body += text(lagBox.x + lagBox.width / 2, top - 10, 'seconds since the run started', {
      'font-size': 11,
      fill: MUTED,
      'text-anchor': 'middle',
    });
    const present = new Set(run.reads.map((r) => r.outcome));
    const outcomes = (Object.keys(OUTCOME_COLOURS) as ReadOutcome[]).filter((o) => present.has(o));
    body += legend(top + 4, [
      ['staleness vs primary (s)', LAG_COLOURS.staleness],
      ["replica's own lag report (s)", LAG_COLOURS.lag],
      ...outcomes.map((o): [string, string] => [
        `${o} (${run.reads.filter((r) => r.outcome === o).length})`,
        OUTCOME_COLOURS[o],
      ]),
    ]);
    top += 26;
  }
  return { id: 'timeline', height: top, plots, body };
}

function lagPlot(
  states: readonly ReportReplicaState[],
  box: Box,
  x: Scale,
  timeTicks: readonly number[],
  end: number,
): string {
  const values = states.flatMap((s) => [s.lagSeconds ?? 0, s.stalenessSeconds ?? 0]);
  const max = Math.max(0.001, ...values);
  const lagTicks = niceTicks(max, 4);
  const y = linearScale(0, lagTicks.at(-1)!, box.y + box.height, box.y);
  let out = '';
  // Where the monitor saw replay paused: a band behind everything.
  states.forEach((state, i) => {
    if (!state.paused) return;
    const until = states[i + 1]?.at ?? end;
    out += rect(x(state.at), box.y, x(until) - x(state.at), box.height, { fill: PAUSED_BAND });
  });
  out += axes(
    box,
    timeTicks,
    x,
    (t) => trim(t),
    lagTicks,
    y,
    (v) => `${trim(v)} s`,
  );
  if (states.some((s) => s.paused)) {
    out += text(box.x + 6, box.y + 14, 'yellow: the monitor reports replay paused', {
      'font-size': 11,
      fill: MUTED,
    });
  }
  if (states.length === 0) {
    out += text(box.x + 8, box.y + 34, 'no replica-state events recorded', {
      'font-size': 12,
      fill: MUTED,
    });
    return out;
  }
  for (const replica of new Set(states.map((s) => s.replica))) {
    const own = states.filter((s) => s.replica === replica);
    for (const [field, colour, width, dash] of [
      ['stalenessSeconds', LAG_COLOURS.staleness, 3, 'none'],
      ['lagSeconds', LAG_COLOURS.lag, 1.5, '5 4'],
    ] as const) {
      const known = own.filter((s) => s[field] !== undefined);
      if (known.length === 0) continue;
      // A step line: each state holds until the next event.
      const points: Array<[number, number]> = [];
      known.forEach((s, i) => {
        const value = y(s[field]!);
        points.push([x(s.at), value]);
        const next = known[i + 1];
        if (next) points.push([x(next.at), value]);
      });
      out += polyline(
        points,
        {
          stroke: colour,
          'stroke-width': width,
          'stroke-dasharray': dash,
          'shape-rendering': 'crispEdges',
        },
        `${replica}: ${field === 'lagSeconds' ? "the replica's own lag report" : 'staleness against the primary'}, ${known.length} samples, max ${trim(Math.max(...known.map((s) => s[field]!)))} s`,
      );
      for (const s of known.filter((k) => k.event)) {
        out += `<circle cx="${n(x(s.at))}" cy="${n(y(s[field]!))}" r="${width}" fill="${colour}"/>`;
      }
    }
  }
  return out;
}

function readsPlot(run: ReportRun, box: Box, x: Scale, timeTicks: readonly number[]): string {
  const latencies = run.reads.map((r) => r.ms).filter((ms): ms is number => ms !== undefined);
  if (latencies.length === 0) {
    return (
      axes(box, timeTicks, x, (t) => trim(t), [], linearScale(0, 1, 0, 1), String) +
      text(box.x + 8, box.y + 20, 'no reads recorded', { 'font-size': 12, fill: MUTED })
    );
  }
  const { lo, hi, ticks } = decades(
    Math.max(0.001, Math.min(...latencies)),
    Math.max(...latencies),
  );
  const y = logScale(lo, hi, box.y + box.height - 4, box.y + 4);
  let out = axes(box, timeTicks, x, (t) => trim(t), ticks, y, msLabel);
  // Rare outcomes last, so a few fallbacks among thousands of replica reads stay visible.
  const counts = new Map<ReadOutcome, number>();
  for (const read of run.reads) counts.set(read.outcome, (counts.get(read.outcome) ?? 0) + 1);
  const ordered = [...run.reads].sort(
    (a, b) => (counts.get(b.outcome) ?? 0) - (counts.get(a.outcome) ?? 0),
  );
  for (const read of ordered) {
    const cy = read.ms === undefined ? box.y + box.height - 4 : y(read.ms);
    const tip = `${trim(read.at)} s: ${read.outcome}${read.ms === undefined ? '' : `, ${trim(read.ms)} ms`}`;
    out += `<circle cx="${n(x(read.at))}" cy="${n(cy)}" r="2.2" fill="${OUTCOME_COLOURS[read.outcome]}"><title>${esc(tip)}</title></circle>`;
  }
  return out;
}

// --- 4. shadow mode: predicted vs measured --------------------------------------------------

/** Title, shadow's predicted field, the strategy that measured it, and its measured field. */
const SHADOW_METRICS: ReadonlyArray<
  readonly [string, keyof ShadowCounts, 'naive' | 'tidemark', CountField]
> = [
  ['naive: missing_in_list', 'predicted_naive_missing', 'naive', 'missing_in_list'],
  [
    'naive: missing_after_write',
    'predicted_naive_missing_after_write',
    'naive',
    'missing_after_write',
  ],
  ['tidemark: replica reads', 'predicted_replica_reads', 'tidemark', 'replica_reads'],
  ['tidemark: primary reads', 'predicted_primary_reads', 'tidemark', 'primary_reads'],
  ['tidemark: waits', 'predicted_waits', 'tidemark', 'waits'],
];

type CountField =
  | 'missing_in_list'
  | 'missing_after_write'
  | 'replica_reads'
  | 'primary_reads'
  | 'waits';

function shadowChart(runs: readonly ReportRun[]): Chart | undefined {
  const shadowRuns = runs.map((run) => run.result).filter((r) => r.shadow !== undefined);
  if (shadowRuns.length === 0) return undefined;
  const plots: PlotBox[] = [];
  let body = heading(
    'Shadow mode: predicted (every read on the primary) vs measured by the real runs',
    'Upper bar: what the shadow run predicted for its reads; lower bar: what naive or tidemark measured on the same seeded scenario.',
  );
  const gap = 24;
  const columnWidth = (PAGE.width - gap * (shadowRuns.length - 1)) / shadowRuns.length;
  const labelWidth = 170;
  const barWidth = Math.min(300, columnWidth - labelWidth - 110);
  const top = 56;
  const rowHeight = 30;
  shadowRuns.forEach((shadowRun, column) => {
    const shadow = shadowRun.shadow!;
    const left = column * (columnWidth + gap);
    body += text(left, top + 12, shadowRun.scenario, {
      'font-size': 13,
      'font-weight': 600,
      fill: INK,
    });
    const box: PlotBox = {
      key: shadowRun.scenario,
      x: left + labelWidth,
      y: top + 22,
      width: barWidth,
      height: SHADOW_METRICS.length * rowHeight,
    };
    plots.push(box);
    SHADOW_METRICS.forEach(([title, predictedField, strategy, measuredField], row) => {
      const measuredRun = runs.find(
        (run) => run.result.scenario === shadowRun.scenario && run.result.strategy === strategy,
      )?.result;
      const predicted = shadow[predictedField] ?? 0;
      const measured = measuredRun?.[measuredField];
      const scale = Math.max(1, predicted, measured ?? 0);
      const y = box.y + row * rowHeight;
      const tip = (what: string, value: number) =>
        `${shadowRun.scenario}: ${what} ${title} ${value}`;
      body += text(left, y + 17, title, { 'font-size': 12, fill: INK });
      body += trackedBar(
        box.x,
        y + 3,
        barWidth,
        11,
        predicted / scale,
        PREDICTED_COLOUR,
        tip('predicted', predicted),
      );
      body +=
        measured === undefined
          ? rect(box.x, y + 15, barWidth, 11, { fill: TRACK })
          : trackedBar(
              box.x,
              y + 15,
              barWidth,
              11,
              measured / scale,
              STRATEGY_COLOURS[strategy],
              tip('measured', measured),
            );
      body += text(
        box.x + barWidth + 6,
        y + 17,
        `${predicted} vs ${measured === undefined ? 'not run' : measured}`,
        { 'font-size': 11, fill: INK },
      );
    });
  });
  const height = top + 22 + SHADOW_METRICS.length * rowHeight + 14;
  body += legend(height, [
    ['predicted (shadow)', PREDICTED_COLOUR],
    ['measured: naive', STRATEGY_COLOURS.naive],
    ['measured: tidemark', STRATEGY_COLOURS.tidemark],
  ]);
  return { id: 'shadow', height: height + 12, plots, body };
}

// --- the numbers ------------------------------------------------------------------------------

/** Every run's output record, the same fields as `--json`, as a table. */
function numbersTable(results: readonly RunResult[]): string {
  const records = results.map((r) => JSON.parse(formatJson(r)) as Record<string, unknown>);
  const columns: string[] = [];
  for (const record of records) {
    for (const key of Object.keys(record)) if (!columns.includes(key)) columns.push(key);
  }
  const cell = (value: unknown, key: string) => {
    const shown = value === undefined ? '' : value === null ? '-' : String(value);
    const cls = key === 'scenario' || key === 'strategy' ? ' class="name"' : '';
    return `<td${cls}>${esc(shown)}</td>`;
  };
  const head = columns
    .map((c) => `<th${c === 'scenario' || c === 'strategy' ? ' class="name"' : ''}>${esc(c)}</th>`)
    .join('');
  const rows = records
    .map((record) => `<tr>${columns.map((c) => cell(record[c], c)).join('')}</tr>`)
    .join('\n');
  return `<section><h2>The numbers (the demo's output lines)</h2><div class="scroll"><table><thead><tr>${head}</tr></thead><tbody>
${rows}
</tbody></table></div></section>`;
}
