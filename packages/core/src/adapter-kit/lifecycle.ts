import { ErrorCode, TidemarkError } from '../errors.js';

/**
 * The closed state every adapter shares: once `close` was called, every operation throws a
 * `TidemarkError` with code `TIDEMARK_CLOSED` instead of reaching a pool that is shutting down,
 * and a second `close` waits for the first instead of ending the pools twice.
 */
export class AdapterLifecycle {
  private closing: Promise<void> | undefined;

  /** @param label how the adapter names itself in the error, for example `PostgreSQL`. */
  constructor(private readonly label: string) {}

  /** True once `close` was called (even while it is still releasing). */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** @throws TidemarkError with code `TIDEMARK_CLOSED` after `close`. */
  assertOpen(): void {
    if (this.closing !== undefined) {
      throw new TidemarkError(ErrorCode.Closed, `The ${this.label} adapter is closed.`);
    }
  }

  /**
   * Mark the adapter closed and run `release` once. Later calls resolve when that first release
   * has finished, so a caller that awaits `close()` never sees pools still open.
   */
  close(release: () => Promise<void>): Promise<void> {
    this.closing ??= release();
    return this.closing;
  }
}
