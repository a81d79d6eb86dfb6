export type {
  Adapter,
  PrimaryVerdict,
  ReadContext,
  ReadOutcome,
  WaitOutcome,
  WriteOptions,
  WriteOutcome,
} from './adapter.js';
export { PRIMARY } from './adapter.js';
export { type Clock, systemClock } from './clock.js';
export {
  ContextErrorCode,
  currentSession,
  maybeCurrentSession,
  NoSessionContextError,
  runWithSession,
} from './context.js';
export { DECISION_REASONS, type DecisionReason, type RouteDecision } from './decision.js';
export {
  type AdapterErrorCode,
  ConfigError,
  ErrorCode,
  isTidemarkError,
  OtherHistoryError,
  ReplicasBehindError,
  TidemarkError,
  type TidemarkErrorOptions,
  TokenError,
} from './errors.js';
export { Emitter } from './events.js';
export { type HealthOptions, isHealthy } from './health.js';
export { RouterMetrics, type RouterMetricsSnapshot } from './metrics.js';
export { PollingMonitor, type PollingMonitorOptions } from './monitor/polling-monitor.js';
export type {
  MonitorEvents,
  ProbeContext,
  ProbeResult,
  ReplicaMonitor,
  ReplicaState,
} from './monitor/types.js';
export { bestEffortReplica, type PlanInput, planRead, type ReadPlan } from './plan.js';
export { type Comparison, POSITION_TEXT_PATTERN, type PositionCodec } from './position.js';
export {
  type ReadOptions,
  type RoutedRead,
  Router,
  type RouterEvents,
  type RouterOptions,
} from './router.js';
export {
  affinity,
  leastLag,
  randomChoice,
  roundRobin,
  type SelectionName,
  type SelectionPolicy,
  selectionPolicy,
} from './selection.js';
export { type FromTokenOptions, Session } from './session.js';
export {
  assertClusterName,
  type SigningKey,
  TOKEN_PREFIX,
  TokenCodec,
  type TokenCodecOptions,
  type TokenData,
} from './token.js';
export { TokenBucket, type TokenBucketOptions } from './token-bucket.js';
export { isSocketError, SOCKET_ERROR_CODES, someErrorInChain } from './transient.js';
