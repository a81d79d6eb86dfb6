import { ConfigError } from '@tidemark/core';

/** The router's health thresholds that bound how long a token can still protect a read. */
export interface LagThreshold {
  /** Router `health.maxLagSeconds`: replicas lagging more are not read from. Router default 10. */
  readonly maxLagSeconds?: number;
  /** Router `health.maxSampleAgeMs`: older samples make a replica unhealthy. Router default 1000. */
  readonly maxSampleAgeMs?: number;
  /** Allowance for clock skew between app servers and probe latency. Default 5 s. */
  readonly marginSeconds?: number;
}

/** Router defaults (see RouterOptions.health in @tidemark/core). */
const DEFAULT_MAX_LAG_SECONDS = 10;
const DEFAULT_MAX_SAMPLE_AGE_MS = 1000;
const DEFAULT_MARGIN_SECONDS = 5;

/**
 * Seconds after which a token protects nothing, so cookies and stored tokens may expire.
 *
 * A replica is read from only while its last sample is at most `maxSampleAgeMs` old and showed
 * a lag of at most `maxLagSeconds`. Such a replica has applied every commit older than
 * `maxLagSeconds + maxSampleAgeMs`; the margin covers clock skew and probe time. With the router
 * defaults: 10 s + 1 s + 5 s = 16 s.
 */
export function tokenLifetimeSeconds(threshold: LagThreshold = {}): number {
  const lag = threshold.maxLagSeconds ?? DEFAULT_MAX_LAG_SECONDS;
  const sampleMs = threshold.maxSampleAgeMs ?? DEFAULT_MAX_SAMPLE_AGE_MS;
  const margin = threshold.marginSeconds ?? DEFAULT_MARGIN_SECONDS;
  for (const [name, value] of [
    ['maxLagSeconds', lag],
    ['maxSampleAgeMs', sampleMs],
    ['marginSeconds', margin],
  ] as const) {
    if (!(Number.isFinite(value) && value >= 0)) {
      throw new ConfigError(`${name} must be a finite number >= 0, got ${String(value)}.`);
    }
  }
  return Math.max(1, Math.ceil(lag + sampleMs / 1000 + margin));
}
