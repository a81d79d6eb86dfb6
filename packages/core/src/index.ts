/**
 * Tidemark's user surface: the router, sessions and tokens, their options, events, errors and
 * metrics. What adapter and integration authors need besides (the adapter contract, the monitor,
 * the planner, position codecs) is in `@tidemark/core/adapter`.
 *
 * @packageDocumentation
 */
export { PRIMARY, type WriteOptions } from './adapter.js';
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
export type { HealthOptions } from './health.js';
export {
  type AcquireOptions,
  type Lease,
  LeaseError,
  type LeaseErrorCode,
  type LeaseKind,
  type LeaseRevokeReason,
  type LeaseRoute,
  type LeaseState,
} from './lease.js';
export type { RouterMetricsSnapshot } from './metrics.js';
export type {
  ReplicaViewChannel,
  SharedViewEvents,
  SharedViewOptions,
  SharedViewRole,
  SharedViewStats,
} from './monitor/shared-view.js';
export type { ReplicaState } from './monitor/types.js';
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
export {
  AutoBudget,
  type AutoBudgetOptions,
  constantBudget,
  type WaitBudget,
  type WaitObservation,
} from './wait-budget.js';
