/**
 * Ground truth for the oracle: what each replica had applied at every moment of a run, which
 * replicas were down when, and when each write committed. Recorded from the simulator itself
 * (every change of a replica's applied position happens in `applyDue`), never from the router.
 */
import { ReplicationSimulator } from './core.js';

/** The simulator, recording every change of every replica's applied sequence number. */
export class RecordingSimulator extends ReplicationSimulator {
  /** Field initialisers run after the base constructor, which never applies anything. */
  private readonly timelines = new Map(this.replicaIds.map((id) => [id, new Timeline(id)]));

  /** Per replica: (time, applied) at every change, starting with (0, 0). */
  timeline(id: string): Timeline {
    const timeline = this.timelines.get(id);
    if (!timeline) throw new Error(`unknown replica ${id}`);
    return timeline;
  }

  override applyDue(): void {
    super.applyDue();
    const now = this.clock.now();
    for (const timeline of this.timelines.values()) {
      timeline.note(now, this.replica(timeline.id).applied);
    }
  }
}

/** One replica's applied sequence number over time (non-decreasing). */
export class Timeline {
  readonly times: number[] = [0];
  readonly applied: number[] = [0];

  constructor(readonly id: string) {}

  note(time: number, applied: number): void {
    const last = this.applied.length - 1;
    if (applied === this.applied[last]) return;
    if (time === this.times[last]) this.applied[last] = applied;
    else {
      this.times.push(time);
      this.applied.push(applied);
    }
  }

  /** Applied sequence number at `time`. */
  appliedAt(time: number): number {
    // Last change at or before `time`.
    let low = 0;
    let high = this.times.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if (this.times[mid]! <= time) low = mid;
      else high = mid - 1;
    }
    return this.applied[low]!;
  }

  /** First time the replica had applied `seq`, or Infinity if it never did in the run. */
  firstApplied(seq: number): number {
    let low = 0;
    let high = this.applied.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.applied[mid]! >= seq) high = mid;
      else low = mid + 1;
    }
    return low < this.applied.length ? this.times[low]! : Number.POSITIVE_INFINITY;
  }
}

/** Down intervals per replica, [crashAt, restartAt). */
export class Outages {
  private readonly intervals = new Map<string, Array<[number, number]>>();

  crash(id: string, at: number): void {
    const list = this.intervals.get(id) ?? [];
    list.push([at, Number.POSITIVE_INFINITY]);
    this.intervals.set(id, list);
  }

  restart(id: string, at: number): void {
    const last = this.intervals.get(id)?.at(-1);
    if (last && last[1] === Number.POSITIVE_INFINITY) last[1] = at;
  }

  isUp(id: string, time: number): boolean {
    const list = this.intervals.get(id);
    return !list?.some(([from, to]) => from <= time && time < to);
  }
}

/** Commit time of every write, in sequence order (seq n committed at `times[n - 1]`). */
export class Commits {
  readonly times: number[] = [];

  add(seq: number, time: number): void {
    if (seq !== this.times.length + 1) {
      throw new Error(
        `writes must commit in sequence order (got ${seq} after ${this.times.length})`,
      );
    }
    this.times.push(time);
  }

  /** Highest sequence number committed at or before `time`. */
  seqAt(time: number): number {
    let low = 0;
    let high = this.times.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.times[mid]! <= time) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /**
   * Seconds a replica that has applied `applied` trails the primary at `time`: the age of the
   * oldest write it lacks (the simulator's and the probes' definition of lag).
   */
  stalenessSeconds(applied: number, time: number): number {
    if (applied >= this.seqAt(time)) return 0;
    return Math.max(0, time - this.times[applied]!) / 1000;
  }
}

export interface OracleInput {
  readonly replicas: readonly string[];
  readonly timelines: ReadonlyMap<string, Timeline>;
  readonly outages: Outages;
  readonly commits: Commits;
  /** The wait budget a read may spend (core's default `wait.budgetMs`). */
  readonly budgetMs: number;
  /**
   * With a value: also require the serving replica's true staleness to be at most this many
   * seconds (core's `health.maxLagSeconds`, invariant 9). Undefined: any replica that is up.
   */
  readonly maxLagSeconds?: number | undefined;
}

/**
 * Could some replica serve a read that arrives at `time` and must see `seq` (0: no token)?
 * A replica can when it is up and has applied `seq` by the time the read arrives, or within
 * the wait budget after it (then it serves at that moment and must be up then). With
 * `maxLagSeconds`, its true staleness at the serving moment must also be within the limit.
 */
export function replicaCouldServe(input: OracleInput, time: number, seq: number): boolean {
  for (const id of input.replicas) {
    const timeline = input.timelines.get(id)!;
    const appliedAt = seq === 0 ? time : timeline.firstApplied(seq);
    if (appliedAt > time + input.budgetMs) continue;
    const servedAt = Math.max(time, appliedAt);
    if (!input.outages.isUp(id, servedAt)) continue;
    if (
      input.maxLagSeconds !== undefined &&
      input.commits.stalenessSeconds(timeline.appliedAt(servedAt), servedAt) > input.maxLagSeconds
    ) {
      continue;
    }
    return true;
  }
  return false;
}
