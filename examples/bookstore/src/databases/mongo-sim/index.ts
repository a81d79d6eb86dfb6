import { DemoError, DemoErrorCode } from '../../errors.js';
import { REPLICA_ID } from '../../strategies/tidemark-settings.js';
import type { Database } from '../types.js';
import { startSimulatorCluster } from './cluster.js';
import { mongoLab } from './lab.js';
import { MongoOrderBook } from './orders.js';
import { CLIENT_OPTIONS, DEMO_DATABASE, type MongoDemoConnection, smallMongoPool } from './pool.js';

/** Printed under the header and the summary: these numbers come from a simulator. */
export const SIMULATOR_NOTICE =
  'MongoDB replica-set SIMULATOR, not a real mongod: it shows what the driver and @tidemark/mongodb send and decide, not how mongod performs';

/** The `host:port` of a one-member `mongodb://` URL (the replica's direct-connection URL). */
export function memberHost(url: string): string {
  const host = /^mongodb:\/\/(?:[^@/?]*@)?([^/?,]+)(?:[/?]|$)/.exec(url)?.[1];
  if (host === undefined) throw new Error(`not a one-member mongodb:// URL: ${url}`);
  return host;
}

/**
 * MongoDB through `@tidemark/mongodb`, on the harness's in-process replica-set SIMULATOR only;
 * the demo has no mode for your own MongoDB cluster yet (the conformance suite's target `mongo`
 * runs against a real replica set).
 */
export function createMongoSimDatabase(): Database<MongoDemoConnection> {
  const book = new MongoOrderBook();
  return {
    name: 'mongo-sim',
    texts: {
      starting:
        'starting the MongoDB replica-set SIMULATOR in this process (not a real mongod; primary + 2 secondaries)...',
      paused: 'replay paused on the simulated secondary (it keeps receiving the oplog)',
      tidemarkAdapter: '@tidemark/mongodb (driver mongodb 7.9.1, on the replica-set SIMULATOR)',
      tidemarkWait:
        'causal-consistency read with afterClusterTime, and a server-side find with afterClusterTime and maxTimeMS',
      notice: SIMULATOR_NOTICE,
    },
    orders: book,
    lab: mongoLab,
    openPool: smallMongoPool,
    startLocalCluster: () => startSimulatorCluster(book),
    async connectExternalCluster() {
      // parseOptions already refuses URLs with --db mongo-sim; this guards other callers.
      throw new DemoError(
        DemoErrorCode.Usage,
        '--db mongo-sim runs the in-process MongoDB replica-set simulator and takes no --primary-url / --replica-url.',
      );
    },
    async createTidemarkStrategy(context, settings, door) {
      // Loaded on demand: the baselines run without @tidemark/mongodb built.
      const [{ createMongoAdapter }, { createTidemarkStrategy }] = await Promise.all([
        import('@tidemark/mongodb'),
        import('../../strategies/tidemark.js'),
      ]);
      const adapter = createMongoAdapter({
        uri: context.primaryUrl,
        database: DEMO_DATABASE,
        replicas: { [REPLICA_ID]: memberHost(context.replicaUrl) },
        clientOptions: CLIENT_OPTIONS,
      });
      return createTidemarkStrategy(adapter, context, settings, door);
    },
  };
}

/** The `--db mongo-sim` database of the CLI. */
export const mongoSimDatabase = createMongoSimDatabase();
