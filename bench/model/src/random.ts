/**
 * A small seeded generator (sfc32) with the few distributions the model draws from. Every stream
 * of randomness in a run has its own generator, derived from the run's seed and a label, so the
 * workload and the cluster's behaviour are the same for every strategy, and a strategy's own
 * draws (which replica, how long a query takes) cannot shift them.
 */
export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, label = '') {
    // Mix the label into the seed (FNV-1a), then spread it over the state with splitmix32.
    let h = 0x811c9dc5 ^ (seed >>> 0);
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
    let s = h >>> 0;
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
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
