/** Timers of the monitor and the shared view must never keep the process alive on their own. */
export function unrefTimer(timer: ReturnType<typeof setTimeout> | undefined): void {
  (timer as { unref?: () => void } | undefined)?.unref?.();
}

/**
 * `promise`, or a rejection with `timeoutError()` once `ms` pass first (then `onTimeout` runs,
 * e.g. to abort the work). Real time: these bound calls to servers and stores, not clock sleeps.
 */
export function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  timeoutError: () => Error,
  onTimeout?: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      onTimeout?.();
      reject(timeoutError());
    }, ms);
    unrefTimer(timer);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
