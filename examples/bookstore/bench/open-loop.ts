/**
 * The Bookstore workload at a fixed rate (open loop), for `pnpm bench:budget --rate N`.
 *
 * Orders arrive on a clock: order i at `start + i / rate`, whatever earlier orders are doing, so
 * every strategy and budget is offered the same load and a read that waits does not slow the
 * arrivals behind it (in the closed loop of `runWorkload` it does, and gives the replica that
 * much more time for everyone else's reads). Each order is what the closed loop does: the
 * customer writes it and reads their latest orders, and `otherReaders` other customers read
 * theirs. The other customers' reads start at the order's arrival; the writer's read starts when
 * their write is acknowledged (it follows the write, as the page after a form post does). One
 * customer's requests run one at a time, in arrival order (one browser); different customers'
 * requests overlap freely.
 *
 * A read's latency runs from its arrival, not from when it got its turn: time spent queued behind
 * the same customer's earlier requests, a late timer on a busy event loop, the router's fallback
 * queue and the pool all count.
 */
import type { OrderQueries } from '../src/databases/types.js';
import { OrderLedger } from '../src/ledger.js';
import { pickOthers, seededRandom } from '../src/random.js';
import { percentile, round2 } from '../src/stats.js';
import type { Strategy } from '../src/strategies/index.js';

export interface OpenLoopSpec {
  readonly orders: number;
  /** Orders per second, arrivals evenly spaced. */
  readonly ratePerSecond: number;
  readonly customers: number;
  /** Readers per order besides the writer. */
  readonly otherReaders: number;
  /** Same seed, same sequence of writers and readers for every budget. */
  readonly seed: number;
  readonly log: (line: string) => void;
}

export interface OpenLoopResult {
  readonly orders: number;
  readonly reads: number;
  readonly primary_reads: number;
  readonly replica_reads: number;
  /** Reads that waited for the replica (the router's `wait` event fired inside them). */
  readonly waits: number;
  readonly wait_ms_p50: number | null;
  /** Every read, from its arrival. */
  readonly read_ms_p50: number | null;
  readonly read_ms_p99: number | null;
  /** The writers' reads of their own new order, from the write's acknowledgement. */
  readonly own_read_ms_p50: number | null;
  readonly own_read_ms_p99: number | null;
  /** Reads whose list lacked an order the reader had been told was saved. */
  readonly missing_in_list: number;
  readonly checked_reads: number;
  readonly errors: number;
  /** Offered orders per second (arrivals over the arrival span) and the wall time to the last answer. */
  readonly offered_rate: number;
  readonly duration_s: number;
  /** Most an arrival's timer fired late (a busy event loop), in ms. */
  readonly late_ms_max: number;
}

/** Errors printed per run; the rest are only counted. */
const ERRORS_LOGGED = 3;

export async function runOpenLoop<C>(
  strategy: Strategy<C>,
  queries: OrderQueries<C>,
  spec: OpenLoopSpec,
): Promise<OpenLoopResult> {
  if (!(spec.ratePerSecond > 0)) throw new RangeError('the rate must be > 0 orders/s');
  const random = seededRandom(spec.seed);
  const ledger = new OrderLedger();
  const readMs: number[] = [];
  const ownReadMs: number[] = [];
  const waitMs: number[] = [];
  let reads = 0;
  let primaryReads = 0;
  let replicaReads = 0;
  let missing = 0;
  let checked = 0;
  let errors = 0;
  let lateMax = 0;
  const noteError = (what: string, error: unknown): void => {
    errors++;
    if (errors <= ERRORS_LOGGED) {
      const message = error instanceof Error ? error.message : String(error);
      spec.log(`[open loop] ${what} failed: ${message}`);
    }
  };

  /** Each customer's requests, one after another (a job never rejects). */
  const queues = new Map<number, Promise<void>>();
  const enqueue = (customer: number, job: () => Promise<void>): Promise<void> => {
    const next = (queues.get(customer) ?? Promise.resolve()).then(job);
    queues.set(customer, next);
    return next;
  };

  const read = async (reader: number, arrival: number, own: boolean): Promise<void> => {
    reads++;
    let listed: number[];
    try {
      const result = await strategy.read(reader, (connection) =>
        queries.latestOrders(connection, reader),
      );
      const ms = performance.now() - arrival;
      readMs.push(ms);
      if (own) ownReadMs.push(ms);
      if (result.target === 'primary') primaryReads++;
      else replicaReads++;
      if (result.waitedMs !== undefined) waitMs.push(result.waitedMs);
      listed = result.value;
    } catch (error) {
      noteError(`read for customer ${reader}`, error);
      return;
    }
    if (ledger.expected(reader).length === 0) return;
    checked++;
    if (ledger.missingFrom(reader, listed).length > 0) missing++;
  };

  const intervalMs = 1000 / spec.ratePerSecond;
  const start = performance.now() + 20;
  const inFlight: Promise<void>[] = [];
  for (let order = 1; order <= spec.orders; order++) {
    const writer = random.int(1, spec.customers);
    const others = pickOthers(random, spec.customers, writer, spec.otherReaders);
    const arrival = start + (order - 1) * intervalMs;
    const early = arrival - performance.now();
    if (early > 0) await new Promise((resolve) => setTimeout(resolve, early));
    lateMax = Math.max(lateMax, performance.now() - arrival);
    inFlight.push(
      enqueue(writer, async () => {
        try {
          const id = await strategy.write(writer, (connection) =>
            queries.placeOrder(connection, writer, `order ${order} of the fixed-rate run`),
          );
          ledger.acknowledge(writer, id);
        } catch (error) {
          noteError(`write of order ${order}`, error);
        }
        await read(writer, performance.now(), true);
      }),
    );
    for (const reader of others) inFlight.push(enqueue(reader, () => read(reader, arrival, false)));
  }
  const lastArrival = start + (spec.orders - 1) * intervalMs;
  await Promise.all(inFlight);
  const spanS = (lastArrival - start) / 1000;
  return {
    orders: spec.orders,
    reads,
    primary_reads: primaryReads,
    replica_reads: replicaReads,
    waits: waitMs.length,
    wait_ms_p50: round2(percentile(waitMs, 50)),
    read_ms_p50: round2(percentile(readMs, 50)),
    read_ms_p99: round2(percentile(readMs, 99)),
    own_read_ms_p50: round2(percentile(ownReadMs, 50)),
    own_read_ms_p99: round2(percentile(ownReadMs, 99)),
    missing_in_list: missing,
    checked_reads: checked,
    errors,
    offered_rate: spanS > 0 ? Math.round(((spec.orders - 1) / spanS) * 10) / 10 : 0,
    duration_s: round2((performance.now() - start) / 1000) ?? 0,
    late_ms_max: round2(lateMax) ?? 0,
  };
}
