/**
 * Why a read went where it went. Stable strings: dashboards and tests match on them.
 *
 * - `no-token`: the session has no position for this cluster; any healthy replica.
 * - `replica-covered`: a healthy replica had already applied the session's position.
 * - `replica-waited`: a replica caught up within the wait budget.
 * - `primary-fallback`: no replica caught up in time; served by the primary under the cap.
 * - `primary-no-replica`: no healthy replica at all; served by the primary under the cap.
 * - `primary-other-history`: the token is from another history; policy sends it to the primary.
 * - `primary-history-unverified`: the history check did not answer in time; policy
 *   (`otherHistory: 'primary'`) sends it to the primary, and the session is not raised by it.
 * - `degraded-stale`: cap exhausted, policy 'stale': served by a replica that may be behind.
 * - `bad-token-ignored`: the session's position was invalid or impossible and policy ignores it.
 * - `shadow`: shadow mode (`mode: 'shadow'`) sent the read to the primary, as an app without
 *   replica reads does, and predicted in the background where it would have gone.
 */
export type DecisionReason =
  | 'no-token'
  | 'replica-covered'
  | 'replica-waited'
  | 'primary-fallback'
  | 'primary-no-replica'
  | 'primary-other-history'
  | 'primary-history-unverified'
  | 'degraded-stale'
  | 'bad-token-ignored'
  | 'shadow';

export const DECISION_REASONS: readonly DecisionReason[] = [
  'no-token',
  'replica-covered',
  'replica-waited',
  'primary-fallback',
  'primary-no-replica',
  'primary-other-history',
  'primary-history-unverified',
  'degraded-stale',
  'bad-token-ignored',
  'shadow',
];

/** Where one read went, and why. */
export interface RouteDecision {
  readonly cluster: string;
  /** `primary` or a replica id. */
  readonly target: string;
  readonly reason: DecisionReason;
  /** Milliseconds spent waiting for a replica to catch up. */
  readonly waitedMs: number;
  /** True when the result may not include the session's own writes (degraded 'stale'). */
  readonly stale: boolean;
  /** True when the first target failed and the read was retried once elsewhere. */
  readonly retried: boolean;
}

/** Payload of the router's `decision` event: the decision, and how long the whole read took. */
export interface DecisionEvent extends RouteDecision {
  /**
   * Milliseconds from the call to the read's result (routing, waits, the query and a retry),
   * so metrics and spans built from events need no clock of their own around each read.
   */
  readonly durationMs: number;
}

/**
 * What happened to a routed read, coarser than the decision reason, for dashboards and reports.
 * One grouping shared by every exporter (OpenTelemetry's `tidemark.route.outcome`, the
 * Prometheus `outcome` label, shadow-mode predictions), so their numbers line up.
 *
 * - `replica`: served by a replica without waiting (no token, covered, or bad token ignored).
 * - `replica_waited`: a replica caught up within the wait budget.
 * - `primary_fallback`: served by the primary (no replica caught up, none healthy, or a token
 *   from another or an unverified history under `otherHistory: 'primary'`).
 * - `degraded_stale`: the fallback cap was spent and policy `degraded: 'stale'` served a replica
 *   that may be behind.
 * - `error`: the read threw (typed routing error or a failed query).
 * - `shadow`: shadow mode served the read from the primary and only predicted a route.
 */
export type RouteOutcome =
  | 'replica'
  | 'replica_waited'
  | 'primary_fallback'
  | 'degraded_stale'
  | 'error'
  | 'shadow';

const OUTCOME_BY_REASON: Readonly<Record<DecisionReason, RouteOutcome>> = {
  'no-token': 'replica',
  'replica-covered': 'replica',
  'bad-token-ignored': 'replica',
  'replica-waited': 'replica_waited',
  'primary-fallback': 'primary_fallback',
  'primary-no-replica': 'primary_fallback',
  'primary-other-history': 'primary_fallback',
  'primary-history-unverified': 'primary_fallback',
  'degraded-stale': 'degraded_stale',
  shadow: 'shadow',
};

/** The outcome a decision reason belongs to (see {@link RouteOutcome}). */
export function routeOutcome(reason: DecisionReason): RouteOutcome {
  return OUTCOME_BY_REASON[reason];
}
