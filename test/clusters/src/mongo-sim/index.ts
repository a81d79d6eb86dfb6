// MongoDB replica-set SIMULATOR (no real mongod can be obtained on these machines: no server
// package exists for them). It proves what a client library sends and decides, not how mongod behaves.

export { type BsonTimestamp, compareTimestamps, type SimulatorBson } from './bson.js';
export { MongoSimCluster } from './cluster.js';
export { type MemberRole, type OplogEntry, SimulatedMember } from './member.js';
export {
  MongoReplicaSetSimulator,
  type MongoReplicaSetSimulatorOptions,
  type SimulatorCommandRecord,
} from './replica-set-simulator.js';
