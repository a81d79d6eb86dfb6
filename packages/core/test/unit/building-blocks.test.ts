import { describe, expect, it } from 'vitest';
import {
  bestEffortReplica,
  Emitter,
  isHealthy,
  planRead,
  RateLimiter,
  TokenBucket,
} from '../../src/adapter-kit/index.js';
import {
  ConfigError,
  ErrorCode,
  isTidemarkError,
  leastLag,
  OtherHistoryError,
  type ReplicaState,
  ReplicasBehindError,
  systemClock,
  TidemarkError,
  TokenError,
} from '../../src/index.js';
import { type CounterPosition, counterCodec } from '../support/counter-codec.js';
import { cp } from '../support/scripted-adapter.js';
import { FakeClock } from './helpers/fake-clock.js';

const HEALTH = { maxSampleAgeMs: 1000, maxLagSeconds: 10 };
const NOW = 50_000;

function state(
  id: string,
  applied: string | undefined,
  patch: Partial<ReplicaState<CounterPosition>> = {},
): ReplicaState<CounterPosition> {
  return {
    id,
    reachable: true,
    applied: applied === undefined ? undefined : cp(applied),
    lagSeconds: 0,
    lagBytes: undefined,
    paused: false,
    history: 'current',
    behindPrimarySince: undefined,
    sampledAt: NOW,
    failures: 0,
    lastError: undefined,
    ...patch,
  };
}

describe('RateLimiter', () => {
  it('is still exported under its old name, TokenBucket (deprecated)', () => {
    expect(TokenBucket).toBe(RateLimiter);
  });

  it('starts full, refills at ratePerSecond, and never holds more than burst', async () => {
    const clock = new FakeClock();
    const bucket = new RateLimiter({ ratePerSecond: 10, burst: 3 }, clock);
    expect(bucket.available()).toBe(3);
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    await clock.advance(50);
    expect(bucket.available()).toBeCloseTo(0.5, 10);
    expect(bucket.tryTake()).toBe(false);
    await clock.advance(50);
    expect(bucket.tryTake()).toBe(true);
    await clock.advance(3_600_000);
    expect(bucket.available()).toBe(3);
  });

  it('allows at most burst + rate * t takes over any interval', async () => {
    const clock = new FakeClock();
    const bucket = new RateLimiter({ ratePerSecond: 20, burst: 5 }, clock);
    let taken = 0;
    for (let ms = 0; ms < 2000; ms++) {
      while (bucket.tryTake()) taken++;
      await clock.advance(1);
    }
    // 5 at once, then 20 per second for 2 s (the last partial token not yet complete).
    expect(taken).toBeLessThanOrEqual(5 + 20 * 2);
    expect(taken).toBeGreaterThanOrEqual(5 + 20 * 2 - 1);
  });

  it('rejects bad options with ConfigError', () => {
    for (const options of [
      { ratePerSecond: -1, burst: 1 },
      { ratePerSecond: Number.NaN, burst: 1 },
      { ratePerSecond: Number.POSITIVE_INFINITY, burst: 1 },
      { ratePerSecond: 1, burst: 0.5 },
      { ratePerSecond: 1, burst: Number.POSITIVE_INFINITY },
    ]) {
      expect(() => new RateLimiter(options, systemClock)).toThrow(ConfigError);
    }
  });
});

describe('isHealthy', () => {
  it('requires reachable, a position, a fresh sample and lag within the limit', () => {
    expect(isHealthy(state('r', '1.1'), NOW, HEALTH)).toBe(true);
    expect(isHealthy(state('r', '1.1', { reachable: false }), NOW, HEALTH)).toBe(false);
    expect(isHealthy(state('r', undefined), NOW, HEALTH)).toBe(false);
    expect(isHealthy(state('r', '1.1', { sampledAt: NOW - 1000 }), NOW, HEALTH)).toBe(true);
    expect(isHealthy(state('r', '1.1', { sampledAt: NOW - 1001 }), NOW, HEALTH)).toBe(false);
    expect(isHealthy(state('r', '1.1', { sampledAt: Number.NEGATIVE_INFINITY }), NOW, HEALTH)).toBe(
      false,
    );
    expect(isHealthy(state('r', '1.1', { lagSeconds: 10.01 }), NOW, HEALTH)).toBe(false);
    expect(isHealthy(state('r', '1.1', { lagSeconds: undefined }), NOW, HEALTH)).toBe(true);
  });
});

describe('planRead', () => {
  const codec = counterCodec(new Map([[2, 8]]));
  const plan = (states: ReplicaState<CounterPosition>[], required?: string, exclude?: string) =>
    planRead({
      states,
      required: required === undefined ? undefined : cp(required),
      codec,
      now: NOW,
      health: HEALTH,
      selection: leastLag,
      affinityKey: undefined,
      exclude,
    });

  it('without a position, any healthy replica serves (covered: false)', () => {
    const result = plan([state('a', '1.1', { reachable: false }), state('b', '1.1')]);
    expect(result).toMatchObject({ kind: 'replica', covered: false });
    expect(result.kind === 'replica' && result.replica.id).toBe('b');
  });

  it('serves from a covering replica (covered: true)', () => {
    const result = plan(
      [state('a', '1.5', { lagSeconds: 0 }), state('b', '1.9', { lagSeconds: 3 })],
      '1.9',
    );
    expect(result.kind === 'replica' && [result.replica.id, result.covered]).toEqual(['b', true]);
  });

  it('returns behind, unpaused replicas as wait candidates, least lag first', () => {
    const result = plan(
      [
        state('a', '1.5', { lagSeconds: 3 }),
        state('b', '1.5', { lagSeconds: 1, paused: true }),
        state('c', '1.5', { lagSeconds: undefined }),
        state('d', '1.5', { lagSeconds: 2 }),
      ],
      '1.9',
    );
    expect(result.kind === 'wait' && result.candidates.map((s) => s.id)).toEqual(['d', 'a', 'c']);
  });

  it("reports 'none' with otherHistory only when every positioned replica is on another history", () => {
    expect(plan([state('a', '2.12'), state('b', '2.12')], '1.9')).toMatchObject({
      kind: 'none',
      otherHistory: true,
    });
    expect(plan([state('a', '2.12'), state('b', '1.9', { paused: true })], '1.10')).toMatchObject({
      kind: 'none',
      otherHistory: false,
    });
    expect(plan([state('a', '1.1', { reachable: false })], '1.1')).toMatchObject({
      kind: 'none',
      otherHistory: false,
    });
  });

  it('skips the excluded replica (a failed first attempt)', () => {
    const result = plan([state('a', '1.9'), state('b', '1.9', { lagSeconds: 4 })], '1.9', 'a');
    expect(result.kind === 'replica' && result.replica.id).toBe('b');
  });
});

describe('bestEffortReplica', () => {
  it('picks the least-lagged reachable replica with a position, ignoring health limits', () => {
    const states = [
      state('a', '1.1', { lagSeconds: 50, sampledAt: 0 }),
      state('b', '1.1', { lagSeconds: 1, reachable: false }),
      state('c', undefined, { lagSeconds: 0 }),
      state('d', '1.1', { lagSeconds: 20 }),
    ];
    expect(bestEffortReplica(states)?.id).toBe('d');
    expect(bestEffortReplica(states, 'd')?.id).toBe('a');
    expect(bestEffortReplica([state('x', undefined)])).toBeUndefined();
  });
});

describe('errors', () => {
  it('carry stable codes, a retryable flag and a cause', () => {
    const cause = new Error('root');
    const error = new TidemarkError(ErrorCode.ReadFailed, 'read failed', {
      retryable: true,
      cause,
    });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('TidemarkError');
    expect(error.retryable).toBe(true);
    expect(error.cause).toBe(cause);
    expect(isTidemarkError(error)).toBe(true);
    expect(isTidemarkError(new Error('x'))).toBe(false);
    const token = new TokenError(ErrorCode.TokenMalformed, 'bad');
    expect([token.name, token.retryable, token instanceof TidemarkError]).toEqual([
      'TokenError',
      false,
      true,
    ]);
    expect(new ConfigError('bad').code).toBe('TIDEMARK_CONFIG');
    const behind = new ReplicasBehindError('orders', undefined, 12.4);
    expect([behind.retryable, behind.etaMs, behind.cluster]).toEqual([true, undefined, 'orders']);
    expect(behind.message).toContain('waited 12 ms');
    const other = new OtherHistoryError('orders', 'position 1.9');
    expect([other.code, other.retryable]).toEqual(['TIDEMARK_OTHER_HISTORY', false]);
  });
});

describe('Emitter', () => {
  it('delivers to listeners, unsubscribes, isolates throwing listeners, reports has()', () => {
    const emitter = new Emitter<{ ping: (n: number) => void }>();
    expect(emitter.has('ping')).toBe(false);
    const got: number[] = [];
    emitter.on('ping', () => {
      throw new Error('broken listener');
    });
    const off = emitter.on('ping', (n) => got.push(n));
    expect(emitter.has('ping')).toBe(true);
    emitter.emit('ping', 1);
    off();
    emitter.emit('ping', 2);
    expect(got).toEqual([1]);
  });
});
