import { LIST_LENGTH } from '../../ledger.js';
import type { OrderQueries } from '../types.js';
import type { MongoDemoConnection } from './pool.js';

/** One order: `_id` is the id the customer is told about. */
interface OrderDocument {
  _id: number;
  customer: number;
  note: string;
  createdAt: Date;
}

/**
 * The bookstore's write and read in MongoDB, and the "fresh, empty orders table" of each run.
 *
 * The replica-set simulator implements inserts and equality finds only (no drop, no delete), so
 * a run starts on a new, empty collection (`orders_1`, `orders_2`, ...) instead of dropping the
 * old one. MongoDB has no auto-increment: ids are numbered here, 1, 2, ... per run. The workload
 * writes one order at a time, so id order is commit order, and sorting on `_id` lists the latest
 * orders first, as `ORDER BY created_at DESC, id DESC` does on the SQL databases.
 */
export class MongoOrderBook implements OrderQueries<MongoDemoConnection> {
  private run = 0;
  private nextId = 1;

  /** The collection of the current run. */
  get collection(): string {
    return `orders_${this.run}`;
  }

  /** Move to a new, empty collection and restart the ids. */
  startRun(): void {
    this.run++;
    this.nextId = 1;
  }

  async placeOrder(connection: MongoDemoConnection, customer: number, note: string) {
    const id = this.nextId++;
    await this.orders(connection).insertOne(
      { _id: id, customer, note, createdAt: new Date() },
      { session: connection.session },
    );
    return id;
  }

  async latestOrders(connection: MongoDemoConnection, customer: number) {
    const found = await this.orders(connection)
      .find(
        { customer },
        {
          session: connection.session,
          sort: { _id: -1 },
          limit: LIST_LENGTH,
          projection: { _id: 1 },
        },
      )
      .toArray();
    return found.map((document) => Number(document._id));
  }

  private orders(connection: MongoDemoConnection) {
    return connection.db.collection<OrderDocument>(this.collection);
  }
}
