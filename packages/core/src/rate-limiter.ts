import type { Clock } from './clock.js';
import { ConfigError } from './errors.js';

export interface RateLimiterOptions {
  /** Sustained primary fallbacks allowed per second. */
  ratePerSecond: number;
  /** Fallbacks allowed in a burst (bucket size). */
  burst: number;
}

/**
 * Caps leader fallbacks by rate (invariant 5): a token bucket, named for what it limits so that
 * "token" keeps meaning the session's position token. Over any interval of length t, at most
 * `burst + ratePerSecond * t` takes succeed; the property tests check exactly that bound.
 */
export class RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    private readonly options: RateLimiterOptions,
    private readonly clock: Clock,
  ) {
    if (!(options.ratePerSecond >= 0) || !Number.isFinite(options.ratePerSecond)) {
      throw new ConfigError('fallback.ratePerSecond must be a finite number >= 0.');
    }
    if (!(options.burst >= 1) || !Number.isFinite(options.burst)) {
      throw new ConfigError('fallback.burst must be a finite number >= 1.');
    }
    this.tokens = options.burst;
    this.last = clock.now();
  }

  /** Take one token if available. */
  tryTake(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Tokens available now (fractional). */
  available(): number {
    this.refill();
    return this.tokens;
  }

  private refill(): void {
    const now = this.clock.now();
    const elapsed = now - this.last;
    if (elapsed > 0) {
      this.tokens = Math.min(
        this.options.burst,
        this.tokens + (elapsed * this.options.ratePerSecond) / 1000,
      );
      this.last = now;
    }
  }
}

/** @deprecated Renamed {@link RateLimiter}; this alias goes in the next minor. */
export const TokenBucket = RateLimiter;
/** @deprecated Renamed {@link RateLimiter}; this alias goes in the next minor. */
export type TokenBucket = RateLimiter;
/** @deprecated Renamed {@link RateLimiterOptions}. */
export type TokenBucketOptions = RateLimiterOptions;
