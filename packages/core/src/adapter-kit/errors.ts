import { type AdapterErrorCode, ConfigError, TidemarkError } from '../errors.js';

/**
 * Base of the errors an adapter throws itself, for failures only its database shows: a stable
 * `code` of the adapter's own (`TIDEMARK_PG_...`). Never retryable: the same call would fail the
 * same way.
 */
export class AdapterError<C extends AdapterErrorCode = AdapterErrorCode> extends TidemarkError {
  declare readonly code: C;

  constructor(code: C, message: string, options?: { cause?: unknown }) {
    super(code, message, options?.cause === undefined ? {} : { cause: options.cause });
  }
}

/**
 * A read or probe named a replica id the adapter was not configured with. A `ConfigError`
 * (code `TIDEMARK_CONFIG`): the id comes from the caller's configuration, not from the database.
 */
export class UnknownReplicaError extends ConfigError {
  /** The id that was asked for. */
  readonly replicaId: string;

  constructor(replicaId: string, configured: readonly string[]) {
    super(`Unknown replica "${replicaId}"; configured: ${configured.join(', ')}.`);
    this.replicaId = replicaId;
  }
}

/**
 * A `transaction: false` write whose callback returned inside a transaction it opened. There
 * was no commit to capture a position after, so the adapter rolled it back. Never retryable: the
 * callback would do the same again. Each adapter keeps its own stable `code` (for example
 * `TIDEMARK_PG_TRANSACTION_LEFT_OPEN`) so that existing matches keep working.
 */
export class TransactionLeftOpenError extends AdapterError {
  constructor(code: AdapterErrorCode) {
    super(
      code,
      'The callback of a write with transaction: false returned inside an open transaction, so there was no commit to capture a position after; it was rolled back. COMMIT inside the callback, or use transaction: true (the default).',
    );
  }
}

/** The message of any thrown value, for error texts that quote a cause. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
