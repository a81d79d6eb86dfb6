import type { WaitOutcome } from '../adapter.js';
import type { PositionCodec } from '../position.js';

/**
 * Whether a bounded wait can start at all: a budget that is already spent, or a caller who gave
 * up, answers `timeout` at once. Servers must never be sent a zero or negative timeout (MySQL's
 * WAIT_FOR_EXECUTED_GTID_SET blocks forever with 0).
 */
export function waitCannotStart(timeoutMs: number, signal: AbortSignal | undefined): boolean {
  return !(timeoutMs > 0) || signal?.aborted === true;
}

/** What an adapter answers when its server cannot wait (the router then polls the probes). */
export const WAIT_UNSUPPORTED: WaitOutcome<never> = Object.freeze({ outcome: 'unsupported' });

/**
 * The verdict of a server-side wait, from the position the replica reported after it (on the
 * same connection, in the same round trip where possible). The position decides, not the
 * server's status: a wait compares log offsets only, and a replica on another history past that
 * offset must not count as caught up.
 *
 * @param serverReached the server said the wait succeeded. When the position read with it does
 *   not show it yet (read a moment too early), both are applied, so their merge is reported.
 *   Adapters whose position read is exact pass false.
 */
export function waitVerdict<P>(
  codec: PositionCodec<P>,
  observed: P,
  required: P,
  serverReached = false,
): WaitOutcome<P> {
  const relation = codec.compare(observed, required);
  if (relation === 'covered') return { outcome: 'reached', applied: observed };
  if (relation === 'other-history') return { outcome: 'other-history' };
  if (serverReached) return { outcome: 'reached', applied: codec.merge(observed, required) };
  return { outcome: 'timeout' };
}
