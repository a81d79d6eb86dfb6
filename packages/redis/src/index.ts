export { RedisErrorCode, RedisStoreError } from './errors.js';
export {
  JOB_TOKEN_FIELD,
  type JobSessionOptions,
  runJobInSession,
  type StampedPayload,
  sessionFromJob,
  stampJob,
} from './jobs.js';
export { mergePositions } from './merge.js';
export {
  type RedisSubscriber,
  type RedisViewCommands,
  redisReplicaViewChannel,
} from './replica-view.js';
export {
  type ClusterView,
  type DropOutcome,
  type RedisCommands,
  RedisTokenStore,
  type RedisTokenStoreOptions,
} from './store.js';
