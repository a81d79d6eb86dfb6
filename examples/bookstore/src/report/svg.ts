/** Tiny SVG building blocks for the report: strings in, strings out, no DOM. */

export function esc(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** Round for SVG coordinates: two decimals are far below a pixel. */
export function n(value: number): string {
  return String(Math.round(value * 100) / 100);
}

export type Scale = (value: number) => number;

export function linearScale(d0: number, d1: number, r0: number, r1: number): Scale {
  const span = d1 - d0 || 1;
  return (value) => r0 + ((value - d0) / span) * (r1 - r0);
}

/** Log10 scale over [d0, d1] (both > 0); values at or below 0 map to r0. */
export function logScale(d0: number, d1: number, r0: number, r1: number): Scale {
  const l0 = Math.log10(d0);
  const span = Math.log10(d1) - l0 || 1;
  return (value) => (value <= 0 ? r0 : r0 + ((Math.log10(value) - l0) / span) * (r1 - r0));
}

/** Decades that enclose [min, max] (both > 0), for a log axis. */
export function decades(min: number, max: number): { lo: number; hi: number; ticks: number[] } {
  const lo = 10 ** Math.floor(Math.log10(min));
  let hi = 10 ** Math.ceil(Math.log10(max));
  if (hi <= lo) hi = lo * 10;
  const ticks: number[] = [];
  for (let t = lo; t <= hi * 1.0001; t *= 10) ticks.push(t);
  return { lo, hi, ticks };
}

/** About `count` round ticks from 0 to at least `max`. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let t = 0; t < max + step * 0.999; t += step) ticks.push(Math.round(t * 1e6) / 1e6);
  return ticks;
}

/** `1 ms`, `0.25 ms`, `10 ms`, `1 s`: short labels for a latency axis. */
export function msLabel(ms: number): string {
  if (ms >= 1000) return `${trim(ms / 1000)} s`;
  return `${trim(ms)} ms`;
}

export function trim(value: number): string {
  return String(Number(value.toPrecision(3)));
}

export function text(
  x: number,
  y: number,
  body: string,
  attributes: Record<string, string | number> = {},
): string {
  return `<text x="${n(x)}" y="${n(y)}"${attrs(attributes)}>${esc(body)}</text>`;
}

export function rect(
  x: number,
  y: number,
  width: number,
  height: number,
  attributes: Record<string, string | number>,
  title?: string,
): string {
  const body = title === undefined ? '' : `<title>${esc(title)}</title>`;
  return `<rect x="${n(x)}" y="${n(y)}" width="${n(Math.max(0, width))}" height="${n(Math.max(0, height))}"${attrs(attributes)}>${body}</rect>`;
}

export function line(
  x1: number,
  y1: number,
  x2: number,
  y2: number,
  attributes: Record<string, string | number>,
): string {
  return `<line x1="${n(x1)}" y1="${n(y1)}" x2="${n(x2)}" y2="${n(y2)}"${attrs(attributes)}/>`;
}

export function polyline(
  points: ReadonlyArray<readonly [number, number]>,
  attributes: Record<string, string | number>,
  title?: string,
): string {
  const body = title === undefined ? '' : `<title>${esc(title)}</title>`;
  const list = points.map(([x, y]) => `${n(x)},${n(y)}`).join(' ');
  return `<polyline points="${list}" fill="none"${attrs(attributes)}>${body}</polyline>`;
}

export function attrs(attributes: Record<string, string | number>): string {
  return Object.entries(attributes)
    .map(([key, value]) => ` ${key}="${esc(String(value))}"`)
    .join('');
}
