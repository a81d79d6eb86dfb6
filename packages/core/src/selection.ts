import type { ReplicaState } from './monitor/types.js';

/** What the router knows of the load on each replica, for policies that balance it. */
export interface ReplicaLoad {
  /** Reads this router has running on the replica right now. */
  inFlight(id: string): number;
  /**
   * The replica's share of the reads this router started lately, 0..1; undefined while too few
   * were counted. Separates replicas that in-flight counts cannot (at low concurrency nothing is
   * in flight), so sessions that stay on their last replica do not pile up on one.
   */
  recentShare?(id: string): number | undefined;
}

/** Picks one replica among candidates that all satisfy the session. */
export interface SelectionPolicy {
  readonly name: string;
  /**
   * `candidates` is never empty. `affinityKey` is the caller's stable key (user id, session id)
   * when one was given. `load` is the router's count of reads in flight per replica (absent
   * when the caller has none, e.g. a direct `planRead` call).
   */
  select<P>(
    candidates: ReadonlyArray<ReplicaState<P>>,
    affinityKey: string | undefined,
    load?: ReplicaLoad,
  ): ReplicaState<P>;
}

/** Recent read shares closer than this count as equal (two replicas at 49/51 are balanced). */
const SHARE_TOLERANCE = 0.02;

export interface BalancedOptions {
  /** Uniform source in [0, 1); injectable for reproducible tests. Default `Math.random`. */
  random?: () => number;
  /**
   * Lag differences up to this many seconds count as a tie (probe noise: a caught-up replica
   * reports 0 one moment and a few ms the next). Default 0.1.
   */
  lagToleranceSeconds?: number;
}

/**
 * The default: power of two choices on in-flight reads. Two distinct candidates are drawn at
 * random; the one with fewer reads in flight from this router wins; at equal load the one with
 * clearly less lag (beyond `lagToleranceSeconds`) wins, then the one with a clearly smaller
 * share of the router's recent reads (more than {@link SHARE_TOLERANCE} apart); otherwise the
 * first draw. Two caught-up replicas each get about half of the reads at any concurrency, a slow
 * or overloaded replica (reads pile up on it) gets fewer, and a clearly lagging one is only
 * chosen when the fresher one is busier. No allocation per call.
 */
export function balanced(options: BalancedOptions = {}): SelectionPolicy {
  const random = options.random ?? Math.random;
  const tolerance = options.lagToleranceSeconds ?? 0.1;
  if (!(tolerance >= 0)) throw new RangeError('lagToleranceSeconds must be >= 0');
  return {
    name: 'balanced',
    select(candidates, _affinityKey, load) {
      const n = candidates.length;
      if (n === 1) return candidates[0]!;
      const i = Math.floor(random() * n) % n;
      let j = Math.floor(random() * (n - 1)) % (n - 1);
      if (j >= i) j++;
      const a = candidates[i]!;
      const b = candidates[j]!;
      if (load) {
        const loadA = load.inFlight(a.id);
        const loadB = load.inFlight(b.id);
        if (loadA !== loadB) return loadA < loadB ? a : b;
      }
      const lagA = a.lagSeconds ?? Number.POSITIVE_INFINITY;
      const lagB = b.lagSeconds ?? Number.POSITIVE_INFINITY;
      // Infinity - Infinity is NaN: two replicas without a lag figure are a tie.
      if (Math.abs(lagA - lagB) > tolerance) return lagA < lagB ? a : b;
      const shareA = load?.recentShare?.(a.id);
      const shareB = load?.recentShare?.(b.id);
      if (
        shareA !== undefined &&
        shareB !== undefined &&
        Math.abs(shareA - shareB) > SHARE_TOLERANCE
      ) {
        return shareA < shareB ? a : b;
      }
      return a;
    },
  };
}

/**
 * Lowest reported lag wins; replicas without a lag figure rank last. Ties keep config order, so
 * with replicas that are all caught up the first one serves nearly every read: prefer
 * {@link balanced} (the default) unless that is what you want.
 */
export const leastLag: SelectionPolicy = {
  name: 'least-lag',
  select(candidates) {
    let best = candidates[0]!;
    let bestLag = best.lagSeconds ?? Number.POSITIVE_INFINITY;
    for (let i = 1; i < candidates.length; i++) {
      const candidate = candidates[i]!;
      const lag = candidate.lagSeconds ?? Number.POSITIVE_INFINITY;
      if (lag < bestLag) {
        best = candidate;
        bestLag = lag;
      }
    }
    return best;
  },
};

/** Spreads reads evenly over candidates. */
export function roundRobin(): SelectionPolicy {
  let counter = 0;
  return {
    name: 'round-robin',
    select(candidates) {
      counter = (counter + 1) % 1_000_000_007;
      return candidates[counter % candidates.length]!;
    },
  };
}

/** Uniform random choice; `random` is injectable for reproducible tests. */
export function randomChoice(random: () => number = Math.random): SelectionPolicy {
  return {
    name: 'random',
    select(candidates) {
      return candidates[Math.floor(random() * candidates.length) % candidates.length]!;
    },
  };
}

/**
 * Session affinity: the same key goes to the same replica while that replica stays a candidate
 * (warm caches, fewer monotonic-read waits). Uses rendezvous hashing so losing one replica only
 * moves the keys that were on it. Without a key it falls back to `fallback`.
 */
export function affinity(fallback: SelectionPolicy = leastLag): SelectionPolicy {
  return {
    name: 'affinity',
    select(candidates, affinityKey, load) {
      if (affinityKey === undefined) return fallback.select(candidates, undefined, load);
      let best = candidates[0]!;
      let bestScore = -1;
      for (const candidate of candidates) {
        const score = fnv1a(affinityKey, candidate.id);
        if (score > bestScore) {
          best = candidate;
          bestScore = score;
        }
      }
      return best;
    },
  };
}

export type SelectionName = 'balanced' | 'least-lag' | 'round-robin' | 'random' | 'affinity';

export function selectionPolicy(name: SelectionName | SelectionPolicy): SelectionPolicy {
  if (typeof name !== 'string') return name;
  switch (name) {
    case 'balanced':
      return balanced();
    case 'least-lag':
      return leastLag;
    case 'round-robin':
      return roundRobin();
    case 'random':
      return randomChoice();
    case 'affinity':
      return affinity();
  }
}

/** 32-bit FNV-1a over key and replica id: fast, stable across processes and versions. */
function fnv1a(key: string, id: string): number {
  let hash = 0x811c9dc5;
  const text = `${key}\u0000${id}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  // murmur3 fmix32: without it, ids that differ only in their last character (r1, r2, ...)
  // get correlated scores and one replica takes about half of all keys.
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
