import type { PositionCodec } from '../position.js';

interface Sample<P> {
  readonly position: P;
  /** When the monitor first saw the primary at (or past) this position, in clock ms. */
  seenAt: number;
}

/** Distinct positions kept; beyond this every second one is dropped, so old samples get coarser. */
const DEFAULT_CAPACITY = 64;

/**
 * The primary's recent positions with the time each was first seen: the yardstick for a
 * replica's staleness measured from the primary's side (invariant 9).
 *
 * A replica that has not applied a sample first seen at time t lacks something the primary held
 * at t, so it is at least `now - t` stale, whatever it says about itself. A replica cut off from
 * its primary keeps reporting no lag of its own (it replayed everything it received), but once the
 * primary moves on its staleness grows with the clock and it drops out of routing at the health
 * limit. An idle primary does not move, so an idle cut-off replica correctly stays fresh: it is
 * missing nothing. The estimate is a lower bound whose resolution is the primary probe interval.
 */
export class PrimarySamples<P> {
  private samples: Sample<P>[] = [];

  constructor(
    private readonly codec: PositionCodec<P>,
    private readonly capacity = DEFAULT_CAPACITY,
  ) {}

  /** The newest sample's position, if any. */
  latest(): P | undefined {
    return this.samples[this.samples.length - 1]?.position;
  }

  /** Record the primary's position as seen at `seenAt` (clock ms). */
  note(position: P, seenAt: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last) {
      // Not moved since the last sample (or an older answer arriving late): keep the earlier time.
      if (this.codec.compare(last.position, position) === 'covered') return;
      // Neither covers the other in the forward direction: another history (a failover). The old
      // samples describe a primary that is gone.
      if (this.codec.compare(position, last.position) !== 'covered') this.samples = [];
    }
    // A sample seen elsewhere (a shared replica view) can be older than the last one kept: the
    // primary then held every earlier position by that time too, so times stay in order.
    for (const earlier of this.samples) earlier.seenAt = Math.min(earlier.seenAt, seenAt);
    this.samples.push({ position, seenAt });
    if (this.samples.length > this.capacity) this.thin();
  }

  /**
   * First-seen time of the oldest sample `applied` does not cover: since then the replica has
   * lacked something the primary had. Undefined when it covers every sample (or there is none).
   */
  behindSince(applied: P): number | undefined {
    // Samples only grow along one history: a position that covers one covers every earlier one,
    // so the covered samples are a prefix and the first one not covered is the oldest missing.
    // Found by bisection: this runs on every probe answer, and a compare of set-shaped positions
    // (GTID sets) costs microseconds, so scanning 64 samples per probe showed in profiles.
    const samples = this.samples;
    const last = samples[samples.length - 1];
    if (last === undefined || this.codec.compare(applied, last.position) === 'covered') {
      return undefined;
    }
    let low = 0;
    let high = samples.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.codec.compare(applied, samples[middle]!.position) === 'covered') low = middle + 1;
      else high = middle;
    }
    return samples[low]!.seenAt;
  }

  /**
   * First-seen time of the oldest sample that covers `position`: the primary held `position` by
   * then. Undefined when no sample covers it (it is newer than every sample, or from another
   * history).
   */
  seenCovering(position: P): number | undefined {
    // Samples only grow along one history: once one covers `position`, every later one does.
    let low = 0;
    let high = this.samples.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.codec.compare(this.samples[middle]!.position, position) === 'covered') high = middle;
      else low = middle + 1;
    }
    return this.samples[low]?.seenAt;
  }

  /**
   * Seconds since the primary first held something `applied` lacks: 0 when `applied` covers every
   * sample, undefined before the first sample.
   */
  lagSeconds(applied: P, now: number): number | undefined {
    if (this.samples.length === 0) return undefined;
    const since = this.behindSince(applied);
    return since === undefined ? 0 : Math.max(0, (now - since) / 1000);
  }

  /** Forget everything (the primary's history is no longer known). */
  clear(): void {
    this.samples = [];
  }

  private thin(): void {
    const last = this.samples.length - 1;
    this.samples = this.samples.filter((_, i) => i % 2 === 0 || i === last);
  }
}
