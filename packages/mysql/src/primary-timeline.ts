import type { PositionCodec } from '@tidemark/core';

interface Sample<P> {
  readonly position: P;
  /** When the adapter first saw the primary at (or past) this position, in ms. */
  readonly seenAt: number;
}

/** Samples kept; beyond this every second sample is dropped, so old history stays, coarser. */
const DEFAULT_CAPACITY = 64;

/**
 * Lag estimate from the primary's side, for replicas that cannot say how far behind they are:
 * MariaDB shows `Seconds_Behind_Master` as NULL while the SQL thread is stopped, and no server
 * knows how much it has not received yet. The adapter notes each primary position it probes with
 * the time it saw it; a replica's lag is then at least the age of the oldest noted position it has
 * not applied. A lower bound: the primary reached that position at or before it was seen, so the
 * estimate never exceeds the truth by more than the clock's error, and its resolution is the
 * primary probe interval.
 */
export class PrimaryTimeline<P> {
  private samples: Sample<P>[] = [];

  constructor(
    private readonly codec: PositionCodec<P>,
    private readonly capacity = DEFAULT_CAPACITY,
  ) {}

  /** Record the primary's position as seen at `seenAt` (ms). */
  note(position: P, seenAt: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last) {
      // Not moved since the last sample: its time stays the earlier one.
      if (this.codec.compare(last.position, position) === 'covered') return;
      // Neither covers the other in the forward direction: another history (a failover). The old
      // samples describe a primary that is gone.
      if (this.codec.compare(position, last.position) !== 'covered') this.samples = [];
    }
    this.samples.push({ position, seenAt });
    if (this.samples.length > this.capacity) this.thin();
  }

  /**
   * Seconds since the primary first held something `applied` lacks: 0 when `applied` covers every
   * sample, undefined before the first sample.
   */
  lagSeconds(applied: P, now: number): number | undefined {
    if (this.samples.length === 0) return undefined;
    // Samples only grow, so the first one not covered is the oldest missing state.
    for (const sample of this.samples) {
      if (this.codec.compare(applied, sample.position) !== 'covered') {
        return Math.max(0, (now - sample.seenAt) / 1000);
      }
    }
    return 0;
  }

  /** Forget everything (the adapter lost track of the primary). */
  clear(): void {
    this.samples = [];
  }

  private thin(): void {
    const last = this.samples.length - 1;
    this.samples = this.samples.filter((_, i) => i % 2 === 0 || i === last);
  }
}
