/**
 * How long one read may wait for a replica: a constant, or learned from the waits this router
 * has seen (`wait: { budgetMs: 'auto' }`).
 */
export interface WaitBudget {
  /** The budget, in ms, of a read about to wait for one of `candidates`; 0: do not wait. */
  next(candidates: readonly string[]): number;
  /** What a wait given `budgetMs` did: `replica` caught up after `waitedMs`, or none did. */
  record(candidates: readonly string[], outcome: WaitObservation): void;
  /** False when no read ever waits (a constant 0). */
  readonly enabled: boolean;
}

export interface WaitObservation {
  /** The replica that caught up; undefined when none did within the budget. */
  readonly reached: string | undefined;
  readonly waitedMs: number;
  readonly budgetMs: number;
}

/** A fixed budget: `wait: { budgetMs: 250 }`. */
export function constantBudget(ms: number): WaitBudget {
  return { next: () => ms, record: () => undefined, enabled: ms > 0 };
}

export interface AutoBudgetOptions {
  /** The longest budget auto may set, in ms. */
  readonly ceilingMs: number;
  /** Waits remembered per replica. Default 100. */
  readonly window?: number;
  /** Reads that need a wait between two exploring ones (budget = ceiling) while waits do not pay. */
  readonly exploreEvery?: number;
}

/** Waits a replica must have been seen with before its own numbers set the budget. */
const MIN_SAMPLES = 10;
/** Headroom over the observed catch-up times: the budget is p99 x 1.5 + 1 ms. */
const HEADROOM = 1.5;
const SLACK_MS = 1;

interface Sample {
  readonly reached: boolean;
  readonly ms: number;
}

/**
 * Budgets from measurements. Per replica, a sliding window of recent waits: how long a replica
 * took to catch up when it did, and that it did not within the budget when it did not (a wait is
 * censored at its budget). A replica whose waits mostly succeed gets the 99th percentile of its
 * catch-up times with headroom (a caught-up read does not wait for what will not come, and one
 * that will come in time gets the time); one whose waits mostly run out gets no wait at all,
 * because waiting then only adds the budget to a read that ends on the primary anyway; one read in
 * `exploreEvery` still waits the ceiling so that a replica that recovers is noticed, and one
 * that does is learned again from scratch. A replica
 * with fewer than 10 waits seen gets the ceiling (learning). A read waiting for several
 * candidates gets the largest of their budgets: any of them may serve it.
 */
export class AutoBudget implements WaitBudget {
  readonly enabled = true;
  private readonly windows = new Map<string, Sample[]>();
  private readonly size: number;
  private readonly exploreEvery: number;
  private sinceExplore = 0;

  constructor(private readonly options: AutoBudgetOptions) {
    this.size = options.window ?? 100;
    this.exploreEvery = options.exploreEvery ?? 100;
  }

  next(candidates: readonly string[]): number {
    let budget = 0;
    for (const id of candidates) budget = Math.max(budget, this.forReplica(id));
    if (budget === 0 && ++this.sinceExplore >= this.exploreEvery) {
      this.sinceExplore = 0;
      return this.options.ceilingMs;
    }
    return budget;
  }

  record(candidates: readonly string[], outcome: WaitObservation): void {
    if (outcome.budgetMs <= 0) return;
    if (outcome.reached !== undefined) {
      // A replica that was not worth waiting for caught up (an exploring wait): forget its
      // failures and learn it again, rather than needing dozens of successes to outvote them.
      if (this.forReplica(outcome.reached) === 0) this.windows.delete(outcome.reached);
      this.push(outcome.reached, { reached: true, ms: outcome.waitedMs });
      return;
    }
    for (const id of candidates) this.push(id, { reached: false, ms: outcome.budgetMs });
  }

  /** The budget one replica's waits justify now (see the class comment). */
  forReplica(id: string): number {
    const samples = this.windows.get(id);
    const ceiling = this.options.ceilingMs;
    if (!samples || samples.length < MIN_SAMPLES) return ceiling;
    const reached = samples.filter((s) => s.reached).map((s) => s.ms);
    if (reached.length * 2 < samples.length) return 0;
    reached.sort((a, b) => a - b);
    const p99 = reached[Math.min(reached.length - 1, Math.ceil(0.99 * reached.length) - 1)] ?? 0;
    return Math.min(ceiling, p99 * HEADROOM + SLACK_MS);
  }

  private push(id: string, sample: Sample): void {
    let samples = this.windows.get(id);
    if (!samples) {
      samples = [];
      this.windows.set(id, samples);
    }
    samples.push(sample);
    if (samples.length > this.size) samples.shift();
  }
}
