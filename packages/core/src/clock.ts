/** Time source. Injected so the simulator and tests control time; production uses the default. */
export interface Clock {
  /** Monotonic milliseconds. */
  now(): number;
  /** Resolve after `ms` milliseconds, or early with no error when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  sleep: (ms, signal) => timerSleep(ms, signal),
};

/**
 * Resolves once what is already due on `clock` has run: the next macrotask on the system clock,
 * a zero sleep (queued behind the sleepers due at the same instant) on any other clock.
 */
export function afterDue(clock: Clock): Promise<void> {
  if (clock !== systemClock) return clock.sleep(0);
  return new Promise<void>((resolve) => {
    if (typeof setImmediate === 'function') setImmediate(resolve);
    else setTimeout(resolve, 0);
  });
}

function timerSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
