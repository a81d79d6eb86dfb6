/**
 * A small seeded PRNG (mulberry32). Every strategy in a scenario replays the same sequence of
 * writers and readers, so their numbers differ only by routing, not by luck.
 */
export interface Random {
  /** Uniform float in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
}

export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
  };
}

/**
 * `count` distinct customers from 1..`customers`, none equal to `exclude`.
 * Throws a RangeError when there are not enough customers to choose from.
 */
export function pickOthers(
  random: Random,
  customers: number,
  exclude: number,
  count: number,
): number[] {
  if (count > customers - 1) {
    throw new RangeError(`Cannot pick ${count} other customers out of ${customers}.`);
  }
  const picked = new Set<number>();
  while (picked.size < count) {
    const candidate = random.int(1, customers);
    if (candidate !== exclude) picked.add(candidate);
  }
  return [...picked];
}
