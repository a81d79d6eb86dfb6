import { PRIMARY, type PrimaryVerdict } from './adapter.js';
import type { DecisionReason } from './decision.js';
import type { ReplicaState } from './monitor/types.js';
import type { ReadPlan } from './plan.js';

/**
 * The session's position as the ladder sees it. `ignored`: the session had a position, but it
 * did not decode or was impossible (ahead of the primary), and the `badToken: 'ignore'` policy
 * drops it; the read then goes where a session without a position would, labelled so.
 */
export type ResolvedToken<P> =
  | { readonly kind: 'none' }
  | { readonly kind: 'ignored' }
  | { readonly kind: 'position'; readonly position: P };

export const NO_TOKEN: ResolvedToken<never> = { kind: 'none' };
export const IGNORED_TOKEN: ResolvedToken<never> = { kind: 'ignored' };

/** Where a read will run, before it runs. */
export interface Route {
  readonly target: string;
  readonly reason: DecisionReason;
  /** True when the answer may lack the session's own writes (degraded `stale`). */
  readonly stale: boolean;
  /** True when the read must not raise the session (its position's history is unverified). */
  readonly keepSession?: boolean;
  /** Gives back the primary fallback slot this route holds, once its read has ended. */
  readonly release?: (() => void) | undefined;
}

/** A decided route, and the token it was decided for (an impossible one ends up `ignored`). */
export interface Decided<P> {
  readonly route: Route;
  readonly token: ResolvedToken<P>;
}

/** A history check that could not run; distinct from every verdict so it cannot pass as one. */
export class CheckFailed {
  constructor(readonly cause: unknown) {}
}

export type FallbackReason = 'primary-fallback' | 'primary-no-replica' | 'primary-other-history';

/**
 * The facts and policies each rung needs. The router supplies them; the ladder itself holds no
 * state, which is what lets the first attempt and the retry be the same ladder.
 */
export interface Rungs<P> {
  /** The monitor's view right now (`planRead`), without the `exclude`d target. */
  plan(required: P | undefined, exclude: string | undefined): ReadPlan<P>;
  /** Is the position lost by the adapter's verdict on the primary sample alone (MariaDB)? */
  lostByVerdict(required: P): boolean;
  /** Is the position part of the primary's history? Fails closed with {@link CheckFailed}. */
  checkAgainstPrimary(required: P): Promise<PrimaryVerdict | CheckFailed>;
  /** The bounded wait (wait.ts), or undefined when the wait budget is 0. */
  readonly wait:
    | ((required: P, candidates: ReadonlyArray<ReplicaState<P>>) => Promise<string | undefined>)
    | undefined;
  /** The primary under the cap, else the degraded policy (throws or serves stale). */
  fallback(reason: FallbackReason, required: P | undefined, exclude?: string): Promise<Route>;
  /** Policy for a position from another history: a primary route or a thrown typed error. */
  otherHistory(required: P): Route;
  /** Policy when the history check could not answer (invariant 10). */
  historyUnverified(cause: unknown): Route;
  /** Policy for a position ahead of the primary: throws under `reject`, returns to ignore it. */
  impossible(): void;
  /** The retry's ladder has nowhere to go after the primary itself failed. */
  primaryFailed(): never;
}

/**
 * The whole routing ladder of one read attempt (README "How it works", docs/design.md):
 *
 * 1. a position the adapter already knows is lost           -> other-history policy
 * 2. a healthy replica that has the position (or any, none)  -> that replica
 * 3. no position and no healthy replica                      -> primary (primary-no-replica)
 * 4. the position is checked against the primary's history:
 *    other history -> policy; impossible -> bad-token policy, then again from 1 without it
 * 5. wait budget left and replicas behind                    -> bounded wait (replica-waited)
 * 6. the history check failed                                -> fail closed (invariant 10)
 * 7. otherwise                                               -> primary under the cap, else degraded
 *
 * A retry after a failed read (`retryOf`: the failed target) is the same ladder without that
 * target, and without the rungs that spend time: the position was already judged on the first
 * attempt (a replica on the primary's history covered it, or the primary was asked), and the
 * read already spent its wait.
 */
export async function decide<P>(
  rungs: Rungs<P>,
  token: ResolvedToken<P>,
  retryOf?: string,
): Promise<Decided<P>> {
  let current = token;
  for (;;) {
    const required = current.kind === 'position' ? current.position : undefined;
    const done = (route: Route): Decided<P> => ({ route, token: current });
    if (required !== undefined && retryOf === undefined && rungs.lostByVerdict(required)) {
      return done(rungs.otherHistory(required));
    }
    const plan = rungs.plan(required, retryOf);
    const served = replicaDecision(plan, current);
    if (served) return served;
    if (retryOf === PRIMARY) rungs.primaryFailed();
    if (required === undefined) {
      return done(await rungs.fallback('primary-no-replica', undefined, retryOf));
    }
    if (retryOf !== undefined) {
      return done(await rungs.fallback('primary-fallback', required, retryOf));
    }
    // Before spending the wait budget, make sure waiting can succeed at all: a position the
    // primary has not reached, or one from another history, never arrives on a replica.
    const verdict = await rungs.checkAgainstPrimary(required);
    if (verdict === 'other-history') return done(rungs.otherHistory(required));
    if (verdict === 'impossible') {
      rungs.impossible(); // throws under badToken 'reject'
      current = IGNORED_TOKEN;
      continue;
    }
    if (plan.kind === 'wait' && rungs.wait) {
      // Safe even without a verdict: only a replica on the primary's history that covers the
      // position can end the wait, exactly as on the covered path.
      const replica = await rungs.wait(required, plan.candidates);
      if (replica) return done({ target: replica, reason: 'replica-waited', stale: false });
    }
    // The primary is the only place left, and reading it as fresh needs the verdict.
    if (verdict instanceof CheckFailed) return done(rungs.historyUnverified(verdict.cause));
    // Replicas that all report another history while the primary covers the position are still
    // following an old primary: the primary is the only fresh answer (primary-fallback).
    const noReplica = plan.kind === 'none' && !plan.anyHealthy;
    return done(
      await rungs.fallback(noReplica ? 'primary-no-replica' : 'primary-fallback', required),
    );
  }
}

/** A replica serves the read without waiting when the plan found one; undefined otherwise. */
export function replicaDecision<P>(
  plan: ReadPlan<P>,
  token: ResolvedToken<P>,
): Decided<P> | undefined {
  if (plan.kind !== 'replica') return undefined;
  return { route: { target: plan.replica.id, reason: servedReason(token), stale: false }, token };
}

/** Reason of a read a replica serves without waiting. */
function servedReason<P>(token: ResolvedToken<P>): DecisionReason {
  if (token.kind === 'position') return 'replica-covered';
  return token.kind === 'ignored' ? 'bad-token-ignored' : 'no-token';
}

/** The position a read may ask its server to enforce: none for stale or unverified routes. */
export function enforceable<P>(decided: Decided<P>): P | undefined {
  const { route, token } = decided;
  return route.stale || route.keepSession || token.kind !== 'position' ? undefined : token.position;
}
