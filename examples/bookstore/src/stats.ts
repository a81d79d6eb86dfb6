/**
 * Nearest-rank percentile (`p` in 0..100) of `values`; undefined when there are none.
 * Nearest-rank always returns a value that was actually measured.
 */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Round to two decimals for output; keeps `undefined` (no samples) distinct from 0. */
export function round2(value: number | undefined): number | null {
  return value === undefined ? null : Math.round(value * 100) / 100;
}
