import { Prng } from '../../../test/chaos/src/prng.js';

/**
 * A small seeded generator (sfc32, shared with the fault campaign) with the few distributions the model draws from. Every stream
 * of randomness in a run has its own generator, derived from the run's seed and a label, so the
 * workload and the cluster's behaviour are the same for every strategy, and a strategy's own
 * draws (which replica, how long a query takes) cannot shift them.
 */
export class Random {
  private readonly prng: Prng;

  constructor(seed: number, label = '') {
    // Mix the label into the seed (FNV-1a); the chaos campaign's generator does the rest.
    let h = 0x811c9dc5 ^ (seed >>> 0);
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
    this.prng = new Prng(h >>> 0);
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.prng.next();
  }

  /** Uniform in [low, high). */
  uniform(low: number, high: number): number {
    return low + (high - low) * this.next();
  }

  /** Log-uniform in [low, high): every decade equally likely. */
  logUniform(low: number, high: number): number {
    return low * (high / low) ** this.next();
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n) % n;
  }

  /** Exponential with the given mean. */
  exponential(mean: number): number {
    return -mean * Math.log(1 - this.next());
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Poisson with the given (small) mean: Knuth's product method. */
  poisson(mean: number): number {
    const limit = Math.exp(-mean);
    let k = 0;
    let p = this.next();
    while (p > limit) {
      k++;
      p *= this.next();
    }
    return k;
  }

  /** A geometric count of failures before the first success, success probability `p`. */
  geometric(p: number): number {
    let k = 0;
    while (this.next() >= p) k++;
    return k;
  }

  /** A function drawing uniforms from this generator (for APIs that take `() => number`). */
  get fn(): () => number {
    return () => this.next();
  }
}
