/**
 * A small timing harness. Sub-microsecond operations cannot be timed one by one (a
 * `process.hrtime.bigint()` call costs tens of ns), so each sample times a batch sized to take
 * about 25 µs and divides; the spread of those samples (median, p99) shows jitter from GC and
 * neighbours. Warm-up runs first so the JIT has compiled the code under test.
 */

export interface Measurement {
  readonly medianNs: number;
  readonly p99Ns: number;
  readonly batch: number;
  readonly samples: number;
  /** Median of each round, to show how stable the figure is between rounds. */
  readonly roundMedians: readonly number[];
}

export interface MeasureOptions {
  readonly warmupMs?: number;
  readonly rounds?: number;
  readonly samplesPerRound?: number;
  readonly sampleNs?: number;
}

/** Keeps results alive so the JIT cannot drop the work being measured. */
let sink: unknown;

export function consumed(): unknown {
  return sink;
}

export function measureSync(op: () => unknown, options: MeasureOptions = {}): Measurement {
  const { warmupMs = 300, rounds = 5, samplesPerRound = 400, sampleNs = 25_000 } = options;
  const perOp = warmUpSync(op, warmupMs);
  const batch = Math.max(1, Math.ceil(sampleNs / Math.max(perOp, 1)));
  const all: number[] = [];
  const roundMedians: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const samples: number[] = [];
    for (let s = 0; s < samplesPerRound; s++) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < batch; i++) sink = op();
      samples.push(Number(process.hrtime.bigint() - start) / batch);
    }
    roundMedians.push(percentile(samples, 0.5));
    all.push(...samples);
  }
  return summarize(all, batch, roundMedians);
}

export async function measureAsync(
  op: () => Promise<unknown>,
  options: MeasureOptions = {},
): Promise<Measurement> {
  const { warmupMs = 300, rounds = 5, samplesPerRound = 200, sampleNs = 50_000 } = options;
  const perOp = await warmUpAsync(op, warmupMs);
  const batch = Math.max(1, Math.ceil(sampleNs / Math.max(perOp, 1)));
  const all: number[] = [];
  const roundMedians: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const samples: number[] = [];
    for (let s = 0; s < samplesPerRound; s++) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < batch; i++) sink = await op();
      samples.push(Number(process.hrtime.bigint() - start) / batch);
    }
    roundMedians.push(percentile(samples, 0.5));
    all.push(...samples);
  }
  return summarize(all, batch, roundMedians);
}

/** Run until `ms` have passed; returns the observed ns per op, to size the batches. */
function warmUpSync(op: () => unknown, ms: number): number {
  const until = process.hrtime.bigint() + BigInt(ms) * 1_000_000n;
  const start = process.hrtime.bigint();
  let count = 0;
  while (process.hrtime.bigint() < until) {
    for (let i = 0; i < 100; i++) sink = op();
    count += 100;
  }
  return Number(process.hrtime.bigint() - start) / count;
}

async function warmUpAsync(op: () => Promise<unknown>, ms: number): Promise<number> {
  const until = process.hrtime.bigint() + BigInt(ms) * 1_000_000n;
  const start = process.hrtime.bigint();
  let count = 0;
  while (process.hrtime.bigint() < until) {
    for (let i = 0; i < 100; i++) sink = await op();
    count += 100;
  }
  return Number(process.hrtime.bigint() - start) / count;
}

function summarize(all: number[], batch: number, roundMedians: number[]): Measurement {
  return {
    medianNs: percentile(all, 0.5),
    p99Ns: percentile(all, 0.99),
    batch,
    samples: all.length,
    roundMedians,
  };
}

function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index]!;
}

/** One plain, grep-friendly result line. */
export function report(name: string, m: Measurement, targetNs?: number): string {
  const parts = [
    `bench ${name}`,
    `median_ns=${m.medianNs.toFixed(1)}`,
    `p99_ns=${m.p99Ns.toFixed(1)}`,
  ];
  if (targetNs !== undefined) {
    parts.push(`target_ns=${targetNs}`, `ratio=${(m.medianNs / targetNs).toFixed(3)}`);
  }
  parts.push(
    `batch=${m.batch}`,
    `samples=${m.samples}`,
    `round_medians_ns=${m.roundMedians.map((v) => v.toFixed(0)).join(',')}`,
  );
  return parts.join(' ');
}
