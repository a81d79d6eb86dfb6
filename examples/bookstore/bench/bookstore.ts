import type { OrderQueries } from '../src/databases/types.js';
import { OrderLedger } from '../src/ledger.js';
import { pickOthers, type Random, seededRandom } from '../src/random.js';
import type { BenchStrategy } from './strategies.js';

/** Customers per worker: each worker owns its own customers, so its checks stay exact. */
export const CUSTOMERS_PER_WORKER = 25;
/** Readers per order besides the writer, as in the demo. */
const OTHER_READERS = 4;

/**
 * The Bookstore loop of the demo (`src/workload.ts`), made safe for concurrent workers: per
 * order the writer writes it, then the writer (first) and four other customers read their
 * latest orders. Each worker has its own customers and its own ledger (the demo's), so "missing"
 * is exact: a list that lacks an order its reader was told is saved. Nothing is thrown; errors
 * are counted.
 */
export class BookstoreLoad<C> {
  /** Writer's own read right after the write that lacked the order just written. */
  missingOwn = 0;
  /** Writer's own reads checked that way. */
  ownChecked = 0;
  /** Any read (writer or other reader) missing one of that reader's acknowledged orders. */
  missingAny = 0;
  checked = 0;
  readErrors = 0;
  writeErrors = 0;
  firstError: string | undefined;
  readonly readMs: number[] = [];
  private readonly ledgers: OrderLedger[] = [];
  private readonly randoms: Random[] = [];

  /**
   * @param base first customer id of this load; customers are `base + worker * 100 + 1..25`, so
   *   loads with different bases never share a customer (and its rows).
   */
  constructor(
    private readonly strategy: BenchStrategy<C>,
    private readonly orders: OrderQueries<C>,
    concurrency: number,
    private readonly base: number,
    seed: number,
  ) {
    for (let w = 0; w < concurrency; w++) {
      this.ledgers.push(new OrderLedger());
      this.randoms.push(seededRandom(seed * 1000 + w));
    }
  }

  /** One order of worker `w`: the write and its five reads. */
  async order(w: number): Promise<void> {
    const random = this.randoms[w]!;
    const ledger = this.ledgers[w]!;
    const customer = (local: number) => this.base + w * 100 + local;
    const writerLocal = random.int(1, CUSTOMERS_PER_WORKER);
    const readers = [
      writerLocal,
      ...pickOthers(random, CUSTOMERS_PER_WORKER, writerLocal, OTHER_READERS),
    ].map(customer);
    const writer = readers[0]!;
    let written: number | undefined;
    try {
      written = await this.strategy.write(writer, (connection) =>
        this.orders.placeOrder(connection, writer, 'bench order'),
      );
      ledger.acknowledge(writer, written);
    } catch (error) {
      this.note(error);
      this.writeErrors++;
    }
    for (const [index, reader] of readers.entries()) {
      const started = performance.now();
      let listed: number[];
      try {
        listed = await this.strategy.read(reader, (connection) =>
          this.orders.latestOrders(connection, reader),
        );
      } catch (error) {
        this.note(error);
        this.readErrors++;
        continue;
      }
      this.readMs.push(performance.now() - started);
      if (ledger.expected(reader).length === 0) continue;
      this.checked++;
      const missing = ledger.missingFrom(reader, listed).length > 0;
      if (missing) this.missingAny++;
      if (index === 0 && written !== undefined) {
        this.ownChecked++;
        if (!listed.includes(written)) this.missingOwn++;
      }
    }
  }

  private note(error: unknown): void {
    this.firstError ??= error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  }
}
