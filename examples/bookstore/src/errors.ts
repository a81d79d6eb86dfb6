/** Stable codes of the demo's own errors; match on `code`, not on the message. */
export const DemoErrorCode = {
  /** Bad command-line arguments. */
  Usage: 'BOOKSTORE_USAGE',
  /** The cluster could not be started or reached. */
  Cluster: 'BOOKSTORE_CLUSTER',
  /** Replay could not be paused or resumed on the replica (usually: not a superuser). */
  ReplayControl: 'BOOKSTORE_REPLAY_CONTROL',
  /** The replica did not catch up with the primary in time between runs. */
  CatchUp: 'BOOKSTORE_CATCH_UP',
} as const;

export type DemoErrorCode = (typeof DemoErrorCode)[keyof typeof DemoErrorCode];

/** An error the demo raises on purpose, with a message that says what to do. */
export class DemoError extends Error {
  readonly code: DemoErrorCode;

  constructor(code: DemoErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DemoError';
    this.code = code;
  }
}
