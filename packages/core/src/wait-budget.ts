/**
 * How long one read may wait for a replica: a constant, or learned from the waits this router
 * has seen (`wait: { budgetMs: 'auto' }`).
 */
export interface WaitBudget {
  /**
   * The budget, in ms, of a read about to wait for one of `candidates`; 0: do not wait. `ageMs`:
   * how long ago the primary first held the position the read needs, as far as the router can
   * tell (0 when it cannot, or when it is newer than anything the router has seen).
   */
  next(candidates: readonly string[], ageMs?: number): number;
  /** What a wait given `budgetMs` did: `replica` caught up after `waitedMs`, or none did. */
  record(candidates: readonly string[], outcome: WaitObservation): void;
  /**
   * Called when `next` gave a read no wait: how long, in ms, to watch its candidates without the
   * read waiting (the outcome is then `record`ed as if it had waited that long), or 0 for no
   * watch. How a learned budget notices that waiting would pay again at no cost to the read.
   * Omitted: never.
   */
  explore?(candidates: readonly string[]): number;
  /** False when no read ever waits (a constant 0). */
  readonly enabled: boolean;
}

export interface WaitObservation {
  /** The replica that caught up; undefined when none did within the budget. */
  readonly reached: string | undefined;
  readonly waitedMs: number;
  readonly budgetMs: number;
  /** The `ageMs` the budget was asked with (default 0). */
  readonly ageMs?: number;
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
  /**
   * Reads given no wait between two that are watched for the ceiling without waiting (see
   * {@link WaitBudget.explore}), so that a replica that recovers is noticed. Default 100.
   */
  readonly exploreEvery?: number;
}

/** Waits a replica must have been seen with before its own numbers set the budget. */
const MIN_SAMPLES = 10;
/**
 * While learning: this many waits that ran out, and none that caught up, are enough to stop
 * waiting (each cost a read the whole ceiling); watches that cost no read go on learning.
 */
const LEARNING_RUN_OUTS = 3;
/** Headroom over the observed catch-up times: the budget is p99 x 1.5 + 1 ms. */
const HEADROOM = 1.5;
const SLACK_MS = 1;
/** Waits pay when at least this share of them would catch up within the ceiling. */
const PAYING_SHARE = 0.5;
const EPSILON = 1e-9;

interface Sample {
  readonly reached: boolean;
  /**
   * How long after the primary held the position the replica applied it (`reached`), or had not
   * yet applied it when the wait ran out: the read's age plus its wait.
   */
  readonly ms: number;
}

/**
 * Budgets from measurements. Per replica, a sliding window of recent waits, each counted from
 * when the primary held the position waited for (the read's age, from the router's record of the
 * primary's positions over time, plus the wait): how long the replica took to apply a position
 * when it did, and that it had not by the end of a wait that ran out (censored there). From that
 * window (a Kaplan-Meier estimate, so that waits that ran out early do not hide the catch-ups
 * that come later), a read whose position is `ageMs` old gets: no wait when fewer than half of
 * the positions still missing at that age were applied within the ceiling after it, because
 * waiting then only adds the budget to a read that ends on the primary anyway; otherwise the
 * 99th percentile of the remaining catch-up time with headroom (x 1.5 + 1 ms), capped by the
 * ceiling, so a caught-up read does not wait for what will not come and one that will come in
 * time gets the time. With replay delayed 500 ms and a 250 ms ceiling, a read right after its
 * write does not wait and a read of a position 300 ms old waits about 200 ms.
 *
 * One read in `exploreEvery` whose budget is 0 is watched for the ceiling without waiting
 * ({@link WaitBudget.explore}: the router reads the outcome off the monitor's later samples), so
 * that a replica that recovers is noticed, and one that catches up where no wait was expected to
 * pay is learned again from scratch; no read pays the ceiling for it. A replica with fewer than
 * 10 waits seen gets the ceiling (learning), unless its first 3 or more all ran out: then no
 * wait, and the reads it gives no wait are watched (one at a time per replica) until it has 10.
 * A read waiting for several candidates gets the largest of their budgets: any of them may serve
 * it.
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

  next(candidates: readonly string[], ageMs = 0): number {
    let budget = 0;
    for (const id of candidates) budget = Math.max(budget, this.forReplica(id, ageMs));
    return budget;
  }

  explore(candidates: readonly string[]): number {
    // Still learning a candidate: every read it gave no wait is watched (they cost no read).
    if (candidates.some((id) => this.learning(id))) return this.options.ceilingMs;
    if (++this.sinceExplore < this.exploreEvery) return 0;
    this.sinceExplore = 0;
    return this.options.ceilingMs;
  }

  record(candidates: readonly string[], outcome: WaitObservation): void {
    if (outcome.budgetMs <= 0) return;
    const age = Math.max(0, outcome.ageMs ?? 0);
    if (outcome.reached !== undefined) {
      // A replica that was not worth waiting for right after a write applied a position within
      // the ceiling of the primary holding it (an exploring watch): it recovered. Forget its
      // failures and learn it again, rather than needing dozens of successes to outvote them. A
      // catch-up of an older position says nothing of that and is one more sample.
      if (
        age + outcome.waitedMs <= this.options.ceilingMs &&
        this.forReplica(outcome.reached) === 0
      ) {
        this.windows.delete(outcome.reached);
      }
      this.push(outcome.reached, { reached: true, ms: age + outcome.waitedMs });
      return;
    }
    for (const id of candidates) this.push(id, { reached: false, ms: age + outcome.budgetMs });
  }

  /** The budget one replica's waits justify now for a read `ageMs` old (see the class comment). */
  forReplica(id: string, ageMs = 0): number {
    const samples = this.windows.get(id);
    const ceiling = this.options.ceilingMs;
    if (!samples || samples.length < MIN_SAMPLES) {
      const ranOut = samples?.filter((sample) => !sample.reached).length ?? 0;
      return ranOut >= LEARNING_RUN_OUTS && ranOut === samples?.length ? 0 : ceiling;
    }
    const survival = survivalCurve(samples);
    // Older than every catch-up seen yet and still missing: the age says nothing, count from now.
    const age = survivalAt(survival, ageMs) > EPSILON ? Math.max(0, ageMs) : 0;
    const atAge = survivalAt(survival, age);
    // Every wait seen caught up at once.
    if (atAge <= EPSILON) return Math.min(ceiling, SLACK_MS);
    // Of the positions still missing at this age, the share applied within the ceiling after it.
    const within = atAge - survivalAt(survival, age + ceiling);
    if (within / atAge < PAYING_SHARE - EPSILON) return 0;
    // The 99th percentile of the remaining time among those: the catch-up after which 99% are done.
    for (const point of survival) {
      if (point.ms <= age) continue;
      if (atAge - point.survival >= 0.99 * within - EPSILON) {
        return Math.min(ceiling, (point.ms - age) * HEADROOM + SLACK_MS);
      }
    }
    return ceiling;
  }

  /** Fewer waits or watches of this replica seen than its own numbers need. */
  private learning(id: string): boolean {
    return (this.windows.get(id)?.length ?? 0) < MIN_SAMPLES;
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

interface SurvivalPoint {
  /** A catch-up time seen. */
  readonly ms: number;
  /** Estimated share of positions not yet applied after `ms`. */
  readonly survival: number;
}

/**
 * Kaplan-Meier: the share of positions a replica has not applied `ms` after the primary held
 * them, from catch-up times (events) and waits that ran out (censored at their end).
 */
function survivalCurve(samples: readonly Sample[]): SurvivalPoint[] {
  // At equal times, catch-ups first: a wait censored at t was still at risk at t.
  const sorted = [...samples].sort((a, b) => a.ms - b.ms || Number(b.reached) - Number(a.reached));
  const points: SurvivalPoint[] = [];
  let atRisk = sorted.length;
  let survival = 1;
  for (let i = 0; i < sorted.length; ) {
    const ms = sorted[i]!.ms;
    let events = 0;
    let censored = 0;
    for (; i < sorted.length && sorted[i]!.ms === ms; i++) {
      if (sorted[i]!.reached) events++;
      else censored++;
    }
    if (events > 0) {
      survival *= 1 - events / atRisk;
      points.push({ ms, survival });
    }
    atRisk -= events + censored;
  }
  return points;
}

/** The estimated share still missing `ms` after the primary held them. */
function survivalAt(curve: readonly SurvivalPoint[], ms: number): number {
  let survival = 1;
  for (const point of curve) {
    if (point.ms > ms) break;
    survival = point.survival;
  }
  return survival;
}
