import type { Clock } from '../../../src/index.js';

interface PendingSleep {
  readonly at: number;
  readonly order: number;
  readonly wake: () => void;
}

/** Let every queued microtask (and the continuations they queue) run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A real-time pause, for code that runs on real timers (the monitor's setTimeout). */
export function realDelay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Virtual time for core's `Clock`. Sleeps are queued, not timed: time only moves when a test
 * calls {@link FakeClock.advance} or drives a call with {@link FakeClock.run}, which jumps to the
 * next sleep only once nothing else can run. Concurrent sleeps therefore wake in deadline order,
 * as they would in real time, and a test of a 250 ms budget takes microseconds.
 */
export class FakeClock implements Clock {
  private current: number;
  private sleeps: PendingSleep[] = [];
  private order = 0;

  /** Starts far from zero so that a duration mistaken for a timestamp shows up in assertions. */
  constructor(start = 1_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const entry: PendingSleep = {
        at: this.current + Math.max(0, ms),
        order: this.order++,
        wake: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.sleeps = this.sleeps.filter((s) => s !== entry);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.sleeps.push(entry);
      this.sleeps.sort((a, b) => a.at - b.at || a.order - b.order);
    });
  }

  /** Run `action` when virtual time reaches now + `ms` (a scripted event, like a replica catching up). */
  at(ms: number, action: () => void): void {
    void this.sleep(ms).then(action);
  }

  /** Number of sleeps not yet woken. */
  pendingSleeps(): number {
    return this.sleeps.length;
  }

  /** Move time forward by `ms`, waking due sleeps in deadline order and letting each continue. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await settle();
      const next = this.sleeps[0];
      if (!next || next.at > target) break;
      this.sleeps.shift();
      this.current = Math.max(this.current, next.at);
      next.wake();
    }
    this.current = target;
    await settle();
  }

  /**
   * Drive virtual time until `promise` settles: whenever nothing else can run, jump to the
   * earliest pending sleep. If none is pending, the promise waits on something real (a monitor
   * timer), so give real time a moment. Returns (or rethrows) the promise's outcome.
   */
  async run<T>(promise: Promise<T>, limitMs = 600_000, realLimitMs = 10_000): Promise<T> {
    let done = false;
    promise.then(
      () => {
        done = true;
      },
      () => {
        done = true;
      },
    );
    const startedAt = this.current;
    const realDeadline = performance.now() + realLimitMs;
    while (!done) {
      if (performance.now() > realDeadline) {
        throw new Error(`FakeClock.run: still pending after ${realLimitMs} real ms`);
      }
      await settle();
      if (done) break;
      const next = this.sleeps.shift();
      if (next) {
        if (next.at - startedAt > limitMs) {
          throw new Error(`FakeClock.run: still pending after ${limitMs} virtual ms`);
        }
        this.current = Math.max(this.current, next.at);
        next.wake();
      } else {
        await realDelay(1);
      }
    }
    return promise;
  }
}
