/**
 * The adapter kit: what every Tidemark database adapter needs besides its SQL or BSON. Import it
 * from `@tidemark/core/adapter`; applications never need it.
 *
 * @packageDocumentation
 */
export type {
  Adapter,
  CapturedWrite,
  PrimaryVerdict,
  ReadContext,
  ReadOutcome,
  WaitOutcome,
  WriteOptions,
  WriteOutcome,
} from '../adapter.js';
export { PRIMARY } from '../adapter.js';
export { Emitter } from '../events.js';
export { isHealthy, stalenessSeconds } from '../health.js';
export { RouterMetrics } from '../metrics.js';
export { PollingMonitor, type PollingMonitorOptions } from '../monitor/polling-monitor.js';
export { PrimarySamples } from '../monitor/primary-samples.js';
export { SharedReplicaView } from '../monitor/shared-view.js';
export type {
  MonitorEvents,
  ProbeContext,
  ProbeResult,
  ProbeSample,
  ReplicaHistory,
  ReplicaMonitor,
} from '../monitor/types.js';
export { bestEffortReplica, type PlanInput, planRead, type ReadPlan } from '../plan.js';
export { type Comparison, POSITION_TEXT_PATTERN, type PositionCodec } from '../position.js';
export {
  RateLimiter,
  type RateLimiterOptions,
  TokenBucket,
  type TokenBucketOptions,
} from '../rate-limiter.js';
export { isSocketError, SOCKET_ERROR_CODES, someErrorInChain } from '../transient.js';
export { untilAborted } from '../until-aborted.js';
export { parseBase36BigInt } from './base36.js';
export {
  AdapterError,
  errorMessage,
  TransactionLeftOpenError,
  UnknownReplicaError,
} from './errors.js';
export { AdapterLifecycle } from './lifecycle.js';
export {
  DEFAULT_POOL_SIZE,
  MONITOR_CONNECT_TIMEOUT_MS,
  MONITOR_POOL_SIZE,
  requireOptionsObject,
  urlOrObject,
  validateNonEmptyString,
  validateNonNegative,
  validateOneOf,
  validatePoolSize,
  validateReplicas,
} from './options.js';
export {
  createPoolSet,
  type NodePools,
  type PoolRole,
  PoolSet,
  type PrimaryPools,
} from './pool-set.js';
export {
  RoundTripCounters,
  type RoundTrips,
  type TripCounter,
  tripCounter,
} from './round-trips.js';
export { WAIT_UNSUPPORTED, waitCannotStart, waitVerdict } from './wait.js';
