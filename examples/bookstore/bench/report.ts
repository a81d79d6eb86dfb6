/** Cell-specific figures of a row; numbers are ms, shares are 0..1, undefined: no samples. */
export type RowDetail = Record<string, number | string | undefined | Record<string, number>>;

/** One measured cell of one variant. Ratios are to the raw driver's row of the same cell. */
export interface Row {
  readonly cell:
    | 'probes-idle'
    | 'reads'
    | 'writes'
    | 'writes-server'
    | 'bookstore'
    | 'bookstore-paused';
  /** `raw` (the driver alone), `tidemark`, `tidemark-token` (reads), `tidemark-tx` (writes). */
  readonly variant: string;
  readonly concurrency: number;
  readonly seconds: number;
  /** Completed operations: reads, writes, or orders (a write and its five reads). */
  readonly ops: number;
  readonly opsPerSecond: number;
  readonly p50Ms: number | undefined;
  readonly p99Ms: number | undefined;
  readonly errors: number;
  /** opsPerSecond / the raw row's (higher is better; 1 = the raw driver's speed). */
  readonly ratioOps: number | undefined;
  /** p50 / the raw row's p50 (lower is better; 1 = the raw driver's latency). */
  readonly ratioP50: number | undefined;
  readonly detail: RowDetail;
}

/** Run facts printed once: what ran where, when. */
export interface RunInfo {
  readonly date: string;
  readonly target: string;
  readonly server: string;
  readonly driver: string;
  readonly adapter: string;
  /** `default options`, or the options the run turned on. */
  readonly adapterOptions: string;
  readonly node: string;
  readonly cpus: number;
  readonly loadAverage: readonly number[];
  readonly secondsPerCell: number;
}

const round = (value: number, digits: number) => {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
};

function roundDeep(value: unknown): unknown {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
    return Math.abs(value) >= 100 ? Math.round(value) : round(value, 3);
  }
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, roundDeep(v)]));
  }
  return value ?? null;
}

/** One JSON object (one line) for a row, with the run's target and date in it. */
export function rowJson(info: RunInfo, row: Row): string {
  const { detail, ...fields } = row;
  return JSON.stringify(
    roundDeep({
      kind: 'row',
      target: info.target,
      date: info.date,
      cell: fields.cell,
      variant: fields.variant,
      concurrency: fields.concurrency,
      seconds: fields.seconds,
      ops: fields.ops,
      ops_per_s: fields.opsPerSecond,
      p50_ms: fields.p50Ms,
      p99_ms: fields.p99Ms,
      ratio_ops: fields.ratioOps,
      ratio_p50: fields.ratioP50,
      errors: fields.errors,
      ...detail,
    }),
  );
}

/** The run facts as the first JSON line. */
export function infoJson(info: RunInfo): string {
  return JSON.stringify({ kind: 'run', ...info });
}

export function infoText(info: RunInfo): string {
  return [
    `Tidemark end-to-end benchmark, ${info.date}`,
    `  cluster   ${info.server} (harness target ${info.target}), primary + 2 replicas`,
    `  compared  ${info.driver} alone vs ${info.adapter} + @tidemark/core Router, ${info.adapterOptions}, on the same cluster in one process`,
    `  machine   ${info.cpus} cores (shared; load average at start ${info.loadAverage.map((l) => l.toFixed(1)).join(' ')}), Node ${info.node}`,
    `  cells     ${info.secondsPerCell} s measured per variant after a warm-up, in rounds of about 2 s that alternate the variants; x ops = ops/s ÷ raw ops/s, x p50 = p50 ÷ raw p50, both from the same cell of the same run`,
  ].join('\n');
}

const fmt = (value: number | undefined, digits = 2) =>
  value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(digits);

function detailText(detail: RowDetail): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(detail)) {
    if (value === undefined || key === 'first_error') continue;
    if (typeof value === 'object') {
      const inner = Object.entries(value)
        .map(([k, v]) => `${k}:${key === 'share' || key === 'primary_share' ? pct(v) : fmt(v, 1)}`)
        .join(',');
      parts.push(`${key}=${inner}`);
    } else if (typeof value === 'number') {
      parts.push(
        `${key}=${key.endsWith('share') ? pct(value) : Number.isInteger(value) ? value : fmt(value)}`,
      );
    } else {
      parts.push(`${key}=${value}`);
    }
  }
  if (typeof detail['first_error'] === 'string')
    parts.push(`first_error="${detail['first_error']}"`);
  return parts.join(' ');
}

const pct = (share: number) => `${(share * 100).toFixed(1)}%`;

/** The human table: one line per row, aligned. */
export function table(rows: readonly Row[]): string {
  const header = [
    'cell',
    'variant',
    'conc',
    'ops/s',
    'p50 ms',
    'p99 ms',
    'x ops',
    'x p50',
    'errors',
    'details',
  ];
  const lines = rows.map((row) => [
    row.cell,
    row.variant,
    String(row.concurrency),
    row.opsPerSecond === 0 ? '-' : fmt(row.opsPerSecond, 0),
    fmt(row.p50Ms),
    fmt(row.p99Ms),
    fmt(row.ratioOps),
    fmt(row.ratioP50),
    String(row.errors),
    detailText(row.detail),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const render = (cells: string[]) =>
    cells
      .map((cell, i) =>
        i === cells.length - 1
          ? cell
          : i >= 2 && i <= 8
            ? cell.padStart(widths[i]!)
            : cell.padEnd(widths[i]!),
      )
      .join('  ');
  return [render(header), ...lines.map(render)].join('\n');
}
