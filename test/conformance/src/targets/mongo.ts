import {
  createMongoAdapter,
  type MongoAdapter,
  type MongoConnection,
  type MongoPosition,
  WriteInReadError,
} from '@tidemark/mongodb';
import {
  type Cluster,
  getProvider,
  mongoReplicaSetUri,
  startCluster,
} from '@tidemark/test-clusters';
import { BSON } from 'mongodb';
import type {
  AdapterNeeds,
  BadPositions,
  ConformanceTarget,
  ContractOps,
  Workload,
} from '../types.js';

/** The cluster targets the MongoDB adapter is proven against; they share this module. */
export type MongoClusterTarget = 'mongo-sim' | 'mongo';

const DATABASE = 'tidemark_conformance';

interface OrderDocument {
  _id: number;
  customer: number;
  note: string;
}

/** Ids of read-only probes never collide with real orders (those are positive). */
let probeId = -Date.now() * 100;

const orders = (connection: MongoConnection) => connection.db.collection<OrderDocument>('orders');

export const mongoWorkload: Workload<MongoConnection> = {
  async setup() {
    // The first insert creates the collection; `_id` is the only index the suite needs.
  },
  async insertOrder(connection, order) {
    await orders(connection).insertOne(
      { _id: order.id, customer: order.customer, note: order.note },
      { session: connection.session },
    );
  },
  async ordersOf(connection, customer) {
    const found = await orders(connection)
      .find(
        { customer },
        { session: connection.session, sort: { _id: -1 }, limit: 20, projection: { _id: 1 } },
      )
      .toArray();
    return found.map((document) => Number(document._id));
  },
  async tryWrite(connection) {
    probeId -= 1;
    await orders(connection).insertOne(
      { _id: probeId, customer: -1, note: 'must fail when read-only' },
      { session: connection.session },
    );
  },
};

/**
 * The adapter contract's statements. A slow read differs: the simulator runs no JavaScript, so
 * there it is a find that waits for a cluster time far ahead until its maxTimeMS; a real mongod
 * rejects such a time, and sleeps in `$where` instead.
 */
function mongoContract(name: MongoClusterTarget): ContractOps<MongoConnection> {
  return {
    async slowRead(connection, seconds) {
      const ms = Math.round(seconds * 1000);
      if (name === 'mongo-sim') {
        const farAhead = new BSON.Timestamp({ t: Math.floor(Date.now() / 1000) + 100_000, i: 1 });
        await connection.db
          .command(
            {
              find: 'orders',
              filter: {},
              readConcern: { level: 'local', afterClusterTime: farAhead },
              maxTimeMS: ms,
            },
            { session: connection.session },
          )
          .catch((error: unknown) => {
            // MaxTimeMSExpired is the end of the sleep, not a failure of the read.
            if ((error as { code?: unknown }).code !== 50) throw error;
          });
        return;
      }
      await orders(connection)
        .find({ $where: `sleep(${ms}) || true` }, { session: connection.session })
        .limit(1)
        .toArray();
    },
    isReadOnlyRefusal: (error) => error instanceof WriteInReadError,
    async badQuery(connection) {
      await connection.db.command({ tidemarkNoSuchCommand: 1 }, { session: connection.session });
    },
    async insertInOpenTransaction(connection, order) {
      connection.session.startTransaction();
      await mongoWorkload.insertOrder(connection, order);
    },
    ...(name === 'mongo-sim'
      ? {
          noRollbackReason:
            'the simulator runs no transactions: it applies the insert at once and answers abortTransaction with CommandNotFound',
        }
      : {}),
  };
}

/** A million seconds past `current`: no test cluster's clock gets there. */
const FAR_AHEAD_SECONDS = 1_000_000;

const mongoBadPositions: BadPositions<MongoPosition> = {
  impossible: (current) => ({
    time: { t: current.time.t + FAR_AHEAD_SECONDS, i: 1 },
    term: current.term,
  }),
  invalidText: 'not-a-mongo-position',
};

/**
 * Replica ids are the cluster's node names (`n1`, `n2`), so scenarios can pause or kill the
 * replica a route decision names. Writes use majority write concern, the adapter's default
 * requirement, except where a scenario needs a write no replica has yet.
 */
function adapterFor(cluster: Cluster, needs: AdapterNeeds = {}): MongoAdapter {
  const replicas: Record<string, string> = {};
  for (const node of cluster.replicas()) {
    if (node.running) replicas[node.name] = `${node.host}:${node.port}`;
  }
  // Port 1 on the loopback: nothing listens there, so the member is unreachable.
  if (needs.unreachableReplica) replicas[needs.unreachableReplica] = '127.0.0.1:1';
  const lossy = needs.unreplicatedWrites === true;
  return createMongoAdapter({
    uri: mongoReplicaSetUri(cluster, lossy ? '1' : 'majority'),
    database: DATABASE,
    replicas,
    allowNonMajorityWrites: lossy,
    // A killed member must fail a read in seconds, not after the driver's 30 s default; the
    // driver's heartbeats (every 500 ms) answer the monitor's probes without extra round trips.
    // `needs.singleConnection` does not apply: the driver cannot stop an operation it sent, so
    // an aborted read keeps its connection until the server answers, and the driver's own pool
    // opens another for the next read.
    clientOptions: { serverSelectionTimeoutMS: 2000, heartbeatFrequencyMS: 500 },
  });
}

function mongoTarget(name: MongoClusterTarget): ConformanceTarget<MongoPosition, MongoConnection> {
  return {
    name,
    startCluster: () => startCluster(name, { replicas: 2 }),
    createAdapter: adapterFor,
    workload: mongoWorkload,
    contract: mongoContract(name),
    badPositions: mongoBadPositions,
  };
}

/** The MongoDB adapter against the wire-protocol replica-set SIMULATOR (not a real mongod). */
export function mongoSimTarget(): ConformanceTarget<MongoPosition, MongoConnection> {
  return mongoTarget('mongo-sim');
}

/**
 * The same adapter against a real replica set: three `mongod` processes from TIDEMARK_MONGOD,
 * an external set at TIDEMARK_MONGO_URI (TIDEMARK_PROVIDER=external), or containers
 * (TIDEMARK_PROVIDER=testcontainers). Skipped, loudly and never counted, where none exists.
 */
export function realMongoTarget(): ConformanceTarget<MongoPosition, MongoConnection> {
  return {
    ...mongoTarget('mongo'),
    async unavailableReason() {
      const providerName = process.env['TIDEMARK_PROVIDER'] ?? 'local';
      const availability = await getProvider(providerName).available('mongo');
      return availability.ok
        ? undefined
        : `no real MongoDB replica set (provider ${providerName}): ${availability.reason}`;
    },
  };
}
