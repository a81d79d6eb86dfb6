import { type HealthOptions, isHealthy } from './health.js';
import type { ReplicaState } from './monitor/types.js';
import type { PositionCodec } from './position.js';
import type { ReplicaLoad, SelectionPolicy } from './selection.js';

/** The synchronous part of a routing decision: what the monitor's view allows right now. */
export type ReadPlan<P> =
  /** A healthy replica can serve the read now. */
  | { readonly kind: 'replica'; readonly replica: ReplicaState<P>; readonly covered: boolean }
  /** Healthy replicas are behind the session; waiting on them may help (best first). */
  | { readonly kind: 'wait'; readonly candidates: ReadonlyArray<ReplicaState<P>> }
  /**
   * No healthy replica can serve it or catch up. `otherHistory` is true when every replica
   * with a position reports another history (a lost write, or replicas not yet re-pointed).
   */
  | { readonly kind: 'none'; readonly otherHistory: boolean; readonly anyHealthy: boolean };

export interface PlanInput<P> {
  readonly states: ReadonlyArray<ReplicaState<P>>;
  /** The session's position, or undefined when it has none for this cluster. */
  readonly required: P | undefined;
  readonly codec: PositionCodec<P>;
  readonly now: number;
  readonly health: HealthOptions;
  readonly selection: SelectionPolicy;
  readonly affinityKey: string | undefined;
  /** Reads in flight per replica, for selection policies that balance load. */
  readonly load?: ReplicaLoad | undefined;
  /** Replicas already tried by this read (a failed first attempt). */
  readonly exclude?: string | undefined;
}

/**
 * Pure and allocation-light: this runs on every read, and the benchmark holds it under a
 * microsecond for 8 replicas.
 */
export function planRead<P>(input: PlanInput<P>): ReadPlan<P> {
  const { states, required, codec, now, health, exclude } = input;
  const covered: ReplicaState<P>[] = [];
  let behind: ReplicaState<P>[] | undefined;
  let positioned = 0;
  let otherHistory = 0;
  let healthy = 0;
  for (const state of states) {
    if (state.id === exclude || !isHealthy(state, now, health)) continue;
    healthy++;
    if (required === undefined) {
      covered.push(state);
      continue;
    }
    positioned++;
    const relation = codec.compare(state.applied as P, required);
    if (relation === 'covered') covered.push(state);
    else if (relation === 'behind') {
      // A paused replica will not catch up by itself: waiting on it only burns the budget.
      if (!state.paused) {
        behind ??= [];
        behind.push(state);
      }
    } else otherHistory++;
  }
  if (covered.length > 0) {
    return {
      kind: 'replica',
      replica: input.selection.select(covered, input.affinityKey, input.load),
      covered: required !== undefined,
    };
  }
  if (behind) {
    behind.sort(byLag);
    return { kind: 'wait', candidates: behind };
  }
  return {
    kind: 'none',
    otherHistory: positioned > 0 && otherHistory === positioned,
    anyHealthy: healthy > 0,
  };
}

/**
 * Replica to serve a read that is allowed to be stale (degraded 'stale'): reachable, with a
 * position, least lag first.
 */
export function bestEffortReplica<P>(
  states: ReadonlyArray<ReplicaState<P>>,
  exclude?: string,
): ReplicaState<P> | undefined {
  let best: ReplicaState<P> | undefined;
  for (const state of states) {
    if (state.id === exclude || !state.reachable || state.applied === undefined) continue;
    if (!best || byLag(state, best) < 0) best = state;
  }
  return best;
}

function byLag<P>(a: ReplicaState<P>, b: ReplicaState<P>): number {
  return (
    (a.lagSeconds ?? Number.POSITIVE_INFINITY) - (b.lagSeconds ?? Number.POSITIVE_INFINITY) || 0
  );
}
