export {
  createMongoAdapter,
  MongoAdapter,
  type MongoAdapterOptions,
  type MongoAdapterStats,
  type MongoConnection,
  type MongoRoundTrips,
} from './adapter.js';
export { MajorityWriteConcernRequiredError, MongoErrorCode } from './errors.js';
export {
  HistoryBook,
  type HistoryVerdict,
  historyAwareCodec,
  type OplogLookup,
} from './history.js';
export { directMemberUri } from './member-uri.js';
export {
  compareTimes,
  type MongoPosition,
  type MongoTime,
  mongoPositionCodec,
  type SignedClusterTime,
} from './position.js';
export { WriteInReadError } from './read-only.js';
