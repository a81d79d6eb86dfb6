import type { Clock } from './clock.js';
import { ConfigError } from './errors.js';

/**
 * Caps primary fallback reads by how many are in flight at once (invariant 5). A healthy primary
 * answers fast, so few are ever in flight together and the cap never binds, whatever the rate; a
 * primary in trouble answers slowly, reads pile up, and the cap binds: a read that finds every
 * slot taken queues (first in, first out) for at most the queue time, then gives up. By Little's
 * law the rate it lets through is `max / latency`: 16 slots are 16,000 reads/s at 1 ms and 8/s at
 * 2 s.
 */
export class ConcurrencyLimit {
  private active = 0;
  /** Queued acquirers; each returns false when it had already given up. */
  private readonly waiters: Array<(granted: boolean) => boolean> = [];

  constructor(
    readonly max: number,
    private readonly clock: Clock,
  ) {
    if (!(max >= 1)) throw new ConfigError(`fallback.maxConcurrent must be >= 1, got ${max}.`);
  }

  /** Slots taken now. */
  get inFlight(): number {
    return this.active;
  }

  /** Take a slot if one is free, without queueing. */
  tryAcquire(): boolean {
    if (this.active >= this.max || this.waiters.length > 0) return false;
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

  /** Give a slot back: straight to the longest-queued acquirer if any, else free it. */
  release(): void {
    while (this.waiters.length > 0) {
      if (this.waiters.shift()!(true)) return;
    }
    if (this.active > 0) this.active--;
  }
}
