import { percentile } from '../src/stats.js';

/** What one closed-loop run measured. */
export interface LoopResult {
  /** Operations that completed without error. */
  readonly ops: number;
  readonly errors: number;
  /** Wall seconds from the first start to the last completion. */
  readonly seconds: number;
  /** Latency of each successful operation, ms. */
  readonly latencies: readonly number[];
  /** Message of the first error, if any. */
  readonly firstError: string | undefined;
  /**
   * CPU time this process spent during the run (user + system, µs): the benchmark's own work,
   * the driver's, and for Tidemark variants the router's and its monitor's. On a machine whose
   * cores the servers share, CPU per operation is steadier than throughput.
   */
  readonly cpuMicros: number;
}

/**
 * `concurrency` workers, each running `op(worker)` back to back until `seconds` have passed (a
 * closed loop: a new operation starts when the worker's previous one ends). Bounded in time: no
 * operation starts after the deadline, and the caller's operations must be bounded themselves
 * (every Tidemark read is: wait budget, probe timeouts). Errors are counted, never thrown.
 */
export async function closedLoop(
  concurrency: number,
  seconds: number,
  op: (worker: number) => Promise<void>,
): Promise<LoopResult> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const worker = async (index: number) => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        await op(index);
        latencies.push(performance.now() - t0);
      } catch (error) {
        errors++;
        firstError ??= error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => worker(i)));
  const cpu = process.cpuUsage(cpuBefore);
  return {
    ops: latencies.length,
    errors,
    seconds: (performance.now() - started) / 1000,
    latencies,
    firstError,
    cpuMicros: cpu.user + cpu.system,
  };
}

/** Warm-up seconds before a measured cell: connections opened, code compiled. */
export function warmupSeconds(seconds: number): number {
  return Math.min(1, seconds / 5);
}

/** p50 and p99 of a list of ms values (undefined when empty). */
export function quantiles(values: readonly number[]): { p50?: number; p99?: number } {
  const p50 = percentile(values, 50);
  const p99 = percentile(values, 99);
  return {
    ...(p50 === undefined ? {} : { p50 }),
    ...(p99 === undefined ? {} : { p99 }),
  };
}
