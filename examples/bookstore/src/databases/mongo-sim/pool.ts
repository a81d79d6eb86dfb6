import { type ClientSession, type Db, MongoClient, type MongoClientOptions } from 'mongodb';
import type { NodePool } from '../types.js';

/**
 * What the bookstore's MongoDB queries run on: the same shape `@tidemark/mongodb` hands its read
 * and write callbacks, so the order queries run unchanged under every strategy.
 */
export interface MongoDemoConnection {
  readonly client: MongoClient;
  readonly db: Db;
  /** Pass `{ session }` to every operation. */
  readonly session: ClientSession;
}

/** Everything the demo creates lives in this database. */
export const DEMO_DATABASE = 'tidemark_bookstore';

/**
 * Driver options of every client the demo opens: a stopped member fails in seconds rather than
 * after the driver's 30 s default, and heartbeats every 500 ms keep the driver's view fresh.
 */
export const CLIENT_OPTIONS: MongoClientOptions = {
  serverSelectionTimeoutMS: 2000,
  heartbeatFrequencyMS: 500,
};

/**
 * A small pool on one MongoClient: the workload is sequential, so two connections per server are
 * plenty. Each `use` runs in its own session without causal consistency, as an application that
 * does not track positions would; the baselines must not get read-your-writes from the driver.
 */
export function smallMongoPool(url: string): NodePool<MongoDemoConnection> {
  const client = new MongoClient(url, { ...CLIENT_OPTIONS, maxPoolSize: 2 });
  const db = client.db(DEMO_DATABASE);
  return {
    async use(fn) {
      const session = client.startSession({ causalConsistency: false });
      try {
        return await fn({ client, db, session });
      } finally {
        await session.endSession();
      }
    },
    end: () => client.close(),
  };
}
