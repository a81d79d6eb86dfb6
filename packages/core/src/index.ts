export type {
  Adapter,
  CapturedWrite,
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
export {
  DECISION_REASONS,
  type DecisionEvent,
  type DecisionReason,
  type RouteDecision,
  type RouteOutcome,
  routeOutcome,
} from './decision.js';
export {
  type AdapterErrorCode,
  ConfigError,
  ErrorCode,
  HistoryUnverifiedError,
  isTidemarkError,
  OtherHistoryError,
  ReplicasBehindError,
  TidemarkError,
  type TidemarkErrorOptions,
  TokenError,
} from './errors.js';
export { Emitter } from './events.js';
export { type HealthOptions, isHealthy, stalenessSeconds } from './health.js';
export { RouterMetrics, type RouterMetricsSnapshot } from './metrics.js';
export { PollingMonitor, type PollingMonitorOptions } from './monitor/polling-monitor.js';
export { PrimarySamples } from './monitor/primary-samples.js';
export type {
  MonitorEvents,
  ProbeContext,
  ProbeResult,
  ReplicaHistory,
  ReplicaMonitor,
  ReplicaState,
} from './monitor/types.js';
export { bestEffortReplica, type PlanInput, planRead, type ReadPlan } from './plan.js';
export { type Comparison, POSITION_TEXT_PATTERN, type PositionCodec } from './position.js';
export {
  type LostWrite,
  type ReadOptions,
  type RoutedRead,
  Router,
  type RouterEvents,
  type RouterOptions,
  type WriteResult,
} from './router.js';
export {
  affinity,
  type BalancedOptions,
  balanced,
  leastLag,
  type ReplicaLoad,
  randomChoice,
  roundRobin,
  type SelectionName,
  type SelectionPolicy,
  selectionPolicy,
} from './selection.js';
export { type FromTokenOptions, type PendingPosition, Session } from './session.js';
export { type HandleRouter, SessionHandle } from './session-handle.js';
export type { PredictedOutcome, ShadowPrediction, ShadowReport } from './shadow.js';
export { mayRunOnReplica, type SqlFlavour } from './statement-kind.js';
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
export {
  AutoBudget,
  type AutoBudgetOptions,
  constantBudget,
  type WaitBudget,
  type WaitObservation,
} from './wait-budget.js';
