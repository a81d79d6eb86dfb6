import type { ReplicaState } from './monitor/types.js';

/** Picks one replica among candidates that all satisfy the session. */
export interface SelectionPolicy {
  readonly name: string;
  /**
   * `candidates` is never empty. `affinityKey` is the caller's stable key (user id, session id)
   * when one was given.
   */
  select<P>(
    candidates: ReadonlyArray<ReplicaState<P>>,
    affinityKey: string | undefined,
  ): ReplicaState<P>;
}

/** Lowest reported lag wins; replicas without a lag figure rank last. Ties keep config order. */
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
    select(candidates, affinityKey) {
      if (affinityKey === undefined) return fallback.select(candidates, undefined);
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

export type SelectionName = 'least-lag' | 'round-robin' | 'random' | 'affinity';

export function selectionPolicy(name: SelectionName | SelectionPolicy): SelectionPolicy {
  if (typeof name !== 'string') return name;
  switch (name) {
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
