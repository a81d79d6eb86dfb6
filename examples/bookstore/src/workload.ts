import type { ShadowPrediction } from '@tidemark/core';
import type { DbName, OrderQueries } from './databases/types.js';
import { OrderLedger } from './ledger.js';
import type { ScenarioName } from './options.js';
import { pickOthers, seededRandom } from './random.js';
import type { WorkloadTrace } from './report/trace.js';
import type { RunResult, ShadowCounts } from './result.js';
import { percentile, round2 } from './stats.js';
import type { Strategy } from './strategies/index.js';

export interface WorkloadSpec {
  readonly db: DbName;
  readonly scenario: ScenarioName;
  readonly orders: number;
  readonly customers: number;
  /** Readers per order besides the writer. */
  readonly otherReaders: number;
  /** Same seed, same sequence of writers and readers for every strategy. */
  readonly seed: number;
  /** Where to report the first errors of a run (stderr in the CLI). */
  readonly log: (line: string) => void;
  /** Told about every read, for the HTML report; optional. */
  readonly trace?: WorkloadTrace | undefined;
}

/** Errors printed per run; the rest are only counted. */
const ERRORS_LOGGED = 3;

/**
 * The lab experiment, for one strategy: for each order the customer writes it, then the customer
 * and `otherReaders` other customers read their latest orders, one call at a time. Every list is
 * checked against what each reader has been told is saved. `queries` is the only SQL it runs, in
 * the strategy's database.
 */
export async function runWorkload<C>(
  strategy: Strategy<C>,
  queries: OrderQueries<C>,
  spec: WorkloadSpec,
): Promise<RunResult> {
  const random = seededRandom(spec.seed);
  const ledger = new OrderLedger();
  const readMs: number[] = [];
  const waitMs: number[] = [];
  let reads = 0;
  let missing = 0;
  let missingAfterWrite = 0;
  let checked = 0;
  let replicaReads = 0;
  let primaryReads = 0;
  let errors = 0;
  const noteError = (what: string, error: unknown): void => {
    errors++;
    if (errors <= ERRORS_LOGGED) {
      const message = error instanceof Error ? error.message : String(error);
      spec.log(`[${spec.scenario}/${strategy.name}] ${what} failed: ${message}`);
    }
  };
  const predictions: PendingPrediction[] = [];
  const started = performance.now();
  spec.trace?.begin();

  for (let order = 1; order <= spec.orders; order++) {
    const writer = random.int(1, spec.customers);
    const readers = [writer, ...pickOthers(random, spec.customers, writer, spec.otherReaders)];
    try {
      const id = await strategy.write(writer, (connection) =>
        queries.placeOrder(connection, writer, `order ${order} of the ${spec.scenario} run`),
      );
      ledger.acknowledge(writer, id);
    } catch (error) {
      noteError(`write of order ${order}`, error);
    }
    for (const reader of readers) {
      reads++;
      const readStarted = performance.now();
      let listed: number[];
      try {
        const read = await strategy.read(reader, (connection) =>
          queries.latestOrders(connection, reader),
        );
        readMs.push(performance.now() - readStarted);
        spec.trace?.read({ startedAt: readStarted, ms: readMs.at(-1)!, target: read.target });
        if (read.target === 'primary') primaryReads++;
        else replicaReads++;
        if (read.waitedMs !== undefined) waitMs.push(read.waitedMs);
        if (read.prediction) {
          predictions.push({
            prediction: read.prediction,
            checked: ledger.expected(reader).length > 0,
            afterWrite: reader === writer,
          });
        }
        listed = read.value;
      } catch (error) {
        spec.trace?.read({ startedAt: readStarted, error: true });
        noteError(`read for customer ${reader}`, error);
        continue;
      }
      if (ledger.expected(reader).length === 0) continue;
      checked++;
      if (ledger.missingFrom(reader, listed).length > 0) {
        missing++;
        if (reader === writer) missingAfterWrite++;
      }
    }
  }

  const duration = (performance.now() - started) / 1000;
  const shadow = predictions.length > 0 ? await shadowCounts(predictions) : undefined;
  return {
    scenario: spec.scenario,
    strategy: strategy.name,
    orders: spec.orders,
    reads,
    missing_in_list: missing,
    replica_reads: replicaReads,
    primary_reads: primaryReads,
    errors,
    waits: waitMs.length,
    wait_ms_p50: round2(percentile(waitMs, 50)),
    read_ms_p50: round2(percentile(readMs, 50)),
    read_ms_p99: round2(percentile(readMs, 99)),
    checked_reads: checked,
    missing_after_write: missingAfterWrite,
    duration_s: round2(duration) ?? 0,
    db: spec.db,
    ...(shadow ? { shadow } : {}),
  };
}

interface PendingPrediction {
  readonly prediction: Promise<ShadowPrediction>;
  /** The reader had acknowledged orders: the read could miss one (as `checked_reads`). */
  readonly checked: boolean;
  readonly afterWrite: boolean;
}

/** Tally the shadow run's predictions once every one has finished (they never reject). */
async function shadowCounts(pending: readonly PendingPrediction[]): Promise<ShadowCounts> {
  const settled = await Promise.all(pending.map((p) => p.prediction));
  let replica = 0;
  let primary = 0;
  let errors = 0;
  let naiveMissing = 0;
  let naiveAfterWrite = 0;
  const waits: number[] = [];
  settled.forEach((prediction, i) => {
    const read = pending[i] as PendingPrediction;
    if (prediction.outcome === 'error') errors++;
    else if (prediction.outcome === 'replica' || prediction.outcome === 'replica_waited') replica++;
    else primary++;
    if (prediction.waited) waits.push(prediction.waitedMs);
    if (read.checked && prediction.naiveStale === true) {
      naiveMissing++;
      if (read.afterWrite) naiveAfterWrite++;
    }
  });
  return {
    predicted_replica_reads: replica,
    predicted_primary_reads: primary,
    predicted_errors: errors,
    predicted_waits: waits.length,
    predicted_wait_ms_p50: round2(percentile(waits, 50)),
    predicted_naive_missing: naiveMissing,
    predicted_naive_missing_after_write: naiveAfterWrite,
  };
}
