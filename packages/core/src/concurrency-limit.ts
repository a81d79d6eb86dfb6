import type { Clock } from './clock.js';
import { ConfigError } from './errors.js';

/**
 * How an adaptive limit moves: from `floor` up to `ceiling` while the primary answers as fast as
 * it usually does, back toward `floor` when it slows down.
 */
export interface AdaptiveLimitOptions {
  readonly floor: number;
  readonly ceiling: number;
  /** Recent latency above this many times the usual one shrinks the limit. */
  readonly tolerance: number;
  /** Recent latency above this (ms) never grows the limit: only fast answers earn slots. */
  readonly healthyMs: number;
}

/** The router's default: 16 slots, up to 256 while fallback reads take under 50 ms and under 2x their usual time. */
export const DEFAULT_ADAPTIVE_LIMIT: AdaptiveLimitOptions = {
  floor: 16,
  ceiling: 256,
  tolerance: 2,
  healthyMs: 50,
};

/** Weight of the newest sample in the recent latency (an exponential moving average). */
const RECENT_WEIGHT = 0.1;
/**
 * Weight of the newest sample in the usual latency: a much slower average, so a slowdown shows
 * as recent against usual for about a thousand reads. (A minimum would not do: with the long
 * tail of real query times it sits well under the typical read, and the limit would shrink on a
 * healthy primary.)
 */
const USUAL_WEIGHT = 0.002;

/**
 * Caps primary fallback reads by how many are in flight at once (invariant 5). A healthy primary
 * answers fast, so few are ever in flight together and the cap never binds, whatever the rate; a
 * primary in trouble answers slowly, reads pile up, and the cap binds: a read that finds every
 * slot taken queues (first in, first out) for at most the queue time, then gives up. By Little's
 * law the rate it lets through is `max / latency`: 16 slots are 16,000 reads/s at 1 ms and 8/s at
 * 2 s.
 *
 * A fixed number of slots also caps a healthy primary's fallback rate, at `max / latency`: one
 * app process offering 20,000 fallback reads/s at 1.5 ms each needs 30 slots. With
 * {@link AdaptiveLimitOptions} the limit learns it: each read that ran while every slot was taken
 * adds one slot, as long as the recent latency (slot held, queueing excluded) stays within
 * `tolerance` times the usual one and under `healthyMs`; once it does not (the primary slows,
 * whether from its own trouble or from the fallback load itself) the limit shrinks by a tenth per
 * recent latency, down to `floor`. A primary that is slow from the start never grows it.
 */
export class ConcurrencyLimit {
  private active = 0;
  /** Queued acquirers; each returns false when it had already given up. */
  private readonly waiters: Array<(granted: boolean) => boolean> = [];
  private limit: number;
  /** A read found every slot taken since the last growth: more slots would have been used. */
  private bound = false;
  private recentMs: number | undefined;
  private usualMs = 0;
  private lastShrink = Number.NEGATIVE_INFINITY;

  constructor(
    max: number,
    private readonly clock: Clock,
    private readonly adaptive?: AdaptiveLimitOptions,
  ) {
    if (!(max >= 1)) throw new ConfigError(`fallback.maxConcurrent must be >= 1, got ${max}.`);
    this.limit = adaptive ? adaptive.floor : max;
  }

  /** Slots now (moves with an adaptive limit). */
  get max(): number {
    return this.limit;
  }

  /** Slots taken now. */
  get inFlight(): number {
    return this.active;
  }

  /** Take a slot if one is free, without queueing. */
  tryAcquire(): boolean {
    if (this.active >= this.limit || this.waiters.length > 0) {
      this.bound = true;
      return false;
    }
    this.active++;
    return true;
  }

  /**
   * Take a slot, queueing up to `timeoutMs` (clock time) for one to free up. Resolves true with a
   * slot (give it back with {@link release}), false after the timeout or when `signal` aborts.
   */
  acquire(timeoutMs: number, signal?: AbortSignal): Promise<boolean> | boolean {
    if (this.tryAcquire()) return true;
    if (!(timeoutMs > 0) || signal?.aborted) return false;
    return new Promise<boolean>((resolve) => {
      const timer = new AbortController();
      let settled = false;
      const settle = (granted: boolean): boolean => {
        if (settled) return false;
        settled = true;
        timer.abort();
        signal?.removeEventListener('abort', giveUp);
        resolve(granted);
        return true;
      };
      const giveUp = () => {
        const index = this.waiters.indexOf(settle);
        if (index >= 0) this.waiters.splice(index, 1);
        settle(false);
      };
      this.waiters.push(settle);
      signal?.addEventListener('abort', giveUp, { once: true });
      void this.clock.sleep(timeoutMs, timer.signal).then(() => {
        if (!settled) giveUp();
      });
    });
  }

  /**
   * Give a slot back: to the longest-queued acquirer if any (unless the limit has shrunk below
   * the slots in use), else free it. `heldSince`: clock time the slot was granted,
   * the sample an adaptive limit learns from.
   */
  release(heldSince?: number): void {
    if (heldSince !== undefined && this.adaptive) this.learn(this.clock.now() - heldSince);
    if (this.active > 0) this.active--;
    // Usually one waiter takes the freed slot; after growth, more; after shrinking, none.
    while (this.waiters.length > 0 && this.active < this.limit) {
      if (this.waiters.shift()!(true)) this.active++;
    }
  }

  private learn(sampleMs: number): void {
    const adaptive = this.adaptive!;
    const now = this.clock.now();
    if (this.recentMs === undefined) {
      this.recentMs = sampleMs;
      this.usualMs = sampleMs;
    } else {
      this.recentMs += RECENT_WEIGHT * (sampleMs - this.recentMs);
      this.usualMs += USUAL_WEIGHT * (sampleMs - this.usualMs);
    }
    const slow =
      this.recentMs > adaptive.healthyMs ||
      this.recentMs > adaptive.tolerance * Math.max(this.usualMs, 0.05);
    if (slow) {
      this.bound = false;
      if (now - this.lastShrink >= this.recentMs && this.limit > adaptive.floor) {
        this.limit = Math.max(adaptive.floor, Math.floor(this.limit * 0.9));
        this.lastShrink = now;
      }
    } else if (this.bound && this.limit < adaptive.ceiling) {
      this.limit++;
      this.bound = false;
    }
  }
}
