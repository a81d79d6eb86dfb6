import type { StrategyName } from '../../src/options.js';
import {
  type ChartId,
  type ChartLayout,
  LAG_COLOURS,
  LAYOUT_ELEMENT_ID,
  OUTCOME_COLOURS,
  type PlotBox,
  PREDICTED_COLOUR,
  STRATEGY_COLOURS,
} from '../../src/report/html.js';
import { type Png, rgbAt } from './png.js';

/**
 * Checks on a screenshot of the report: the regions come from the layout the page carries, the
 * expected marks from the demo's own result lines (never from the report's samples), so a chart
 * whose samples went missing fails.
 */

/** One result line as `--json` prints it (or as RunResult has it). */
export interface ResultLine {
  readonly scenario: string;
  readonly strategy: string;
  readonly reads: number;
  readonly orders: number;
  readonly checked_reads: number;
  readonly missing_in_list: number;
  readonly missing_after_write: number;
  readonly primary_reads: number;
  readonly replica_reads: number;
  readonly errors: number;
  readonly predicted_primary_reads?: number | undefined;
}

export function layoutOf(html: string): ChartLayout[] {
  const match = new RegExp(
    `<script type="application/json" id="${LAYOUT_ELEMENT_ID}">([^<]*)</script>`,
  ).exec(html);
  if (!match) throw new Error('the report carries no layout block');
  return JSON.parse(match[1]!) as ChartLayout[];
}

export function pageHeight(layout: readonly ChartLayout[]): number {
  return Math.max(...layout.map((chart) => chart.y + chart.height)) + 40;
}

function rgb(hex: string): [number, number, number] {
  const v = Number.parseInt(hex.slice(1), 16);
  return [(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];
}

/** Pixels in `box` within `tolerance` (per channel) of any of `colours`. */
export function countColour(
  png: Png,
  box: PlotBox,
  colours: readonly string[],
  tolerance = 12,
): number {
  const targets = colours.map(rgb);
  let count = 0;
  const x1 = Math.min(png.width, Math.ceil(box.x + box.width));
  const y1 = Math.min(png.height - 1, Math.ceil(box.y + box.height));
  for (let y = Math.max(0, Math.floor(box.y)); y <= y1; y++) {
    for (let x = Math.max(0, Math.floor(box.x)); x < x1; x++) {
      const [r, g, b] = rgbAt(png, x, y);
      if (
        targets.some(
          ([tr, tg, tb]) =>
            Math.abs(r - tr) <= tolerance &&
            Math.abs(g - tg) <= tolerance &&
            Math.abs(b - tb) <= tolerance,
        )
      ) {
        count++;
      }
    }
  }
  return count;
}

/** Right-most pixel of `colour` in `box`, relative to its left edge; 0 when none. */
function extent(png: Png, box: PlotBox, colour: string): number {
  const [tr, tg, tb] = rgb(colour);
  let right = 0;
  for (let y = Math.floor(box.y); y < Math.ceil(box.y + box.height); y++) {
    for (let x = Math.floor(box.x); x < Math.ceil(box.x + box.width) + 2; x++) {
      const [r, g, b] = rgbAt(png, x, y);
      if (Math.abs(r - tr) <= 12 && Math.abs(g - tg) <= 12 && Math.abs(b - tb) <= 12) {
        right = Math.max(right, x + 1 - box.x);
      }
    }
  }
  return right;
}

function plot(layout: readonly ChartLayout[], chart: ChartId, key: string): PlotBox | undefined {
  return layout.find((c) => c.id === chart)?.plots.find((p) => p.key === key);
}

function colourOf(strategy: string): string {
  return STRATEGY_COLOURS[strategy as StrategyName] ?? '#000000';
}

const BAR_METRICS: ReadonlyArray<readonly [string, (l: ResultLine) => [number, number]]> = [
  ['primary share', (l) => [l.primary_reads, l.reads]],
  ['missing_in_list', (l) => [l.missing_in_list, l.checked_reads]],
  ['missing_after_write', (l) => [l.missing_after_write, l.orders]],
];

/**
 * Every problem found, as `chart: what` strings; empty when each chart drew what the result
 * lines say it must.
 */
export function chartProblems(
  png: Png,
  layout: readonly ChartLayout[],
  lines: readonly ResultLine[],
): string[] {
  const problems: string[] = [];
  const need = (chart: ChartId, key: string): PlotBox | undefined => {
    const box = plot(layout, chart, key);
    if (!box) problems.push(`${chart}: no plot area ${key} in the layout`);
    return box;
  };
  const scenarios = [...new Set(lines.map((l) => l.scenario))];
  for (const scenario of scenarios) {
    const rows = lines.filter((l) => l.scenario === scenario);
    // 1. Each bar as long as its share, to 3 px; absent where the share is 0.
    for (const [metric, of] of BAR_METRICS) {
      const box = need('outcomes', `${scenario}/${metric}`);
      if (!box) continue;
      const rowHeight = box.height / rows.length;
      rows.forEach((row, index) => {
        const [part, whole] = of(row);
        const expected = whole === 0 ? 0 : (part / whole) * box.width;
        const band = { ...box, y: box.y + index * rowHeight, height: rowHeight - 1 };
        const drawn = extent(png, band, colourOf(row.strategy));
        if (Math.abs(drawn - expected) > 3) {
          problems.push(
            `outcomes: ${scenario}/${row.strategy} ${metric} bar is ${drawn} px, expected ${expected.toFixed(1)} (${part}/${whole})`,
          );
        }
      });
    }
    // 2. One CDF line per strategy that made reads.
    const latency = need('latency', scenario);
    if (latency) {
      for (const row of rows) {
        if (row.reads - row.errors === 0) continue;
        const drawn = countColour(png, latency, [colourOf(row.strategy)]);
        if (drawn < 40) {
          problems.push(`latency: ${scenario}/${row.strategy} line has ${drawn} px (want >= 40)`);
        }
      }
    }
    // 3. Tidemark's timeline: a lag line and a point per outcome that happened.
    const tidemark = rows.find((row) => row.strategy === 'tidemark');
    if (tidemark) {
      const lag = need('timeline', `${scenario}/tidemark/lag`);
      if (lag) {
        const drawn = countColour(png, lag, [LAG_COLOURS.staleness, LAG_COLOURS.lag]);
        if (drawn < 100) problems.push(`timeline: ${scenario} lag line has ${drawn} px`);
      }
      const reads = need('timeline', `${scenario}/tidemark/reads`);
      if (reads) {
        const groups: Array<[string, number, string[]]> = [
          [
            'replica',
            tidemark.replica_reads,
            [OUTCOME_COLOURS.replica, OUTCOME_COLOURS.replica_waited],
          ],
          ['primary', tidemark.primary_reads, [OUTCOME_COLOURS.primary_fallback]],
        ];
        for (const [what, count, colours] of groups) {
          if (count === 0) continue;
          const drawn = countColour(png, reads, colours);
          const want = 4 * Math.min(count, 10);
          if (drawn < want) {
            problems.push(
              `timeline: ${scenario} ${what} reads (${count}) drew ${drawn} px (want >= ${want})`,
            );
          }
        }
      }
    }
    // 4. Shadow's predictions.
    const shadow = rows.find((row) => row.predicted_primary_reads !== undefined);
    if (shadow) {
      const box = need('shadow', scenario);
      if (box) {
        const drawn = countColour(png, box, [PREDICTED_COLOUR]);
        if (drawn < 200) problems.push(`shadow: ${scenario} predicted bars have ${drawn} px`);
      }
    }
  }
  return problems;
}
