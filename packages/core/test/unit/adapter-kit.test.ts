import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AdapterLifecycle,
  createPoolSet,
  PRIMARY,
  parseBase36BigInt,
  RoundTripCounters,
  requireOptionsObject,
  TransactionLeftOpenError,
  UnknownReplicaError,
  urlOrObject,
  validateNonEmptyString,
  validateNonNegative,
  validateOneOf,
  validatePoolSize,
  validateReplicas,
  waitCannotStart,
  waitVerdict,
} from '../../src/adapter-kit/index.js';
import { ConfigError, ErrorCode, TidemarkError } from '../../src/index.js';
import { counterCodec } from '../support/counter-codec.js';

describe('PoolSet', () => {
  const build = () =>
    createPoolSet('p', { r1: 'a', r2: 'b' }, (source, role, node) => `${node}:${source}:${role}`);

  it('builds write, read and monitor pools on the primary and read and monitor per replica', () => {
    const pools = build();
    expect(pools.replicaIds).toEqual(['r1', 'r2']);
    expect(pools.node(PRIMARY)).toEqual({
      write: 'primary:p:write',
      read: 'primary:p:read',
      monitor: 'primary:p:monitor',
    });
    expect(pools.node('r2')).toEqual({ read: 'r2:b:read', monitor: 'r2:b:monitor' });
    expect(pools.all()).toHaveLength(7);
  });

  it('names an unknown replica with a typed ConfigError, never a plain Error', () => {
    const pools = build();
    let caught: unknown;
    try {
      pools.replica('r3');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(UnknownReplicaError);
    expect(caught).toBeInstanceOf(ConfigError);
    expect(caught).toMatchObject({ code: ErrorCode.Config, replicaId: 'r3' });
    expect((caught as Error).message).toBe('Unknown replica "r3"; configured: r1, r2.');
    // The primary is a route target, not a replica id.
    expect(() => pools.replica(PRIMARY)).toThrow(UnknownReplicaError);
  });

  it('lists a pool shared by several roles once, and ends every pool even when one fails', async () => {
    const shared = { name: 'client' };
    const member = { name: 'x' };
    const pools = createPoolSet<unknown, object>(shared, { r1: 'x' }, (source) =>
      source === shared ? shared : member,
    );
    expect(pools.all()).toHaveLength(2);
    const ended: string[] = [];
    await pools.end(async (pool) => {
      ended.push((pool as { name: string }).name);
      if (ended.length === 1) throw new Error('already gone');
    });
    expect(ended).toEqual(['client', 'x']);
  });
});

describe('AdapterLifecycle', () => {
  it('throws TIDEMARK_CLOSED after close, releases once, and a second close waits for the first', async () => {
    const lifecycle = new AdapterLifecycle('Example');
    expect(() => lifecycle.assertOpen()).not.toThrow();
    let releases = 0;
    let finish: () => void = () => undefined;
    const first = lifecycle.close(
      () =>
        new Promise<void>((resolve) => {
          releases++;
          finish = resolve;
        }),
    );
    let secondDone = false;
    const second = lifecycle
      .close(async () => {
        releases++;
      })
      .then(() => {
        secondDone = true;
      });
    expect(lifecycle.closed).toBe(true);
    expect(() => lifecycle.assertOpen()).toThrow(TidemarkError);
    expect(() => lifecycle.assertOpen()).toThrow('The Example adapter is closed.');
    await Promise.resolve();
    expect(secondDone).toBe(false);
    finish();
    await Promise.all([first, second]);
    expect(releases).toBe(1);
    try {
      lifecycle.assertOpen();
    } catch (error) {
      expect(error).toMatchObject({ code: ErrorCode.Closed, retryable: false });
    }
  });
});

describe('option checks', () => {
  const source = urlOrObject('a URL or options');

  it.each([
    ['no options', () => requireOptionsObject(undefined, 'needs options')],
    ['replicas not an object', () => validateReplicas(null, 'URLs', source)],
    ['a replica named primary', () => validateReplicas({ primary: 'u' }, 'URLs', source)],
    ['an empty replica id', () => validateReplicas({ ' ': 'u' }, 'URLs', source)],
    ['a replica source of the wrong type', () => validateReplicas({ r: 42 }, 'URLs', source)],
    ['poolSize 0', () => validatePoolSize(0)],
    ['poolSize 1.5', () => validatePoolSize(1.5)],
    ['poolSize as text', () => validatePoolSize('4')],
    ['a value outside the allowed ones', () => validateOneOf('mode', 'x', ['a', 'b'])],
    ['a required value missing', () => validateOneOf('mode', undefined, ['a', 'b'], true)],
    ['a negative age', () => validateNonNegative('age', -1)],
    ['an infinite age', () => validateNonNegative('age', Number.POSITIVE_INFINITY)],
    ['an empty name', () => validateNonEmptyString('name', '')],
    ['a required name missing', () => validateNonEmptyString('name', undefined, true)],
  ])('rejects %s with a ConfigError', (_name, run) => {
    expect(run).toThrow(ConfigError);
  });

  it('accepts what adapters accept and defaults the pool size', () => {
    expect(() => validateReplicas({ r1: 'url', r2: { host: 'h' } }, 'URLs', source)).not.toThrow();
    expect(validatePoolSize(undefined)).toBe(10);
    expect(validatePoolSize(3)).toBe(3);
    expect(() => validateOneOf('mode', undefined, ['a'])).not.toThrow();
    expect(() => validateNonNegative('age', 0)).not.toThrow();
    expect(() => validateOneOf('wait', 'server', ['auto', 'poll'])).toThrow(
      `wait must be 'auto' or 'poll', got "server".`,
    );
  });
});

describe('wait verdict', () => {
  const codec = counterCodec(new Map([[2, 5]]));

  it('lets the position read after the wait decide, not the server status', () => {
    expect(waitVerdict(codec, { history: 1, seq: 9 }, { history: 1, seq: 7 })).toEqual({
      outcome: 'reached',
      applied: { history: 1, seq: 9 },
    });
    expect(waitVerdict(codec, { history: 1, seq: 6 }, { history: 1, seq: 7 })).toEqual({
      outcome: 'timeout',
    });
    // Another history past the required offset is never "reached", whatever the server said.
    expect(waitVerdict(codec, { history: 2, seq: 9 }, { history: 1, seq: 7 }, true)).toEqual({
      outcome: 'other-history',
    });
    // The server reached it but the position was read a moment early: both are applied.
    expect(waitVerdict(codec, { history: 1, seq: 6 }, { history: 1, seq: 7 }, true)).toEqual({
      outcome: 'reached',
      applied: { history: 1, seq: 7 },
    });
  });

  it('does not start with a spent budget or an aborted signal', () => {
    const aborted = new AbortController();
    aborted.abort();
    expect(waitCannotStart(0, undefined)).toBe(true);
    expect(waitCannotStart(Number.NaN, undefined)).toBe(true);
    expect(waitCannotStart(50, aborted.signal)).toBe(true);
    expect(waitCannotStart(50, new AbortController().signal)).toBe(false);
  });
});

describe('shared errors and counters', () => {
  it('keeps the adapter code on the shared transaction-left-open error', () => {
    const error = new TransactionLeftOpenError('TIDEMARK_X_TRANSACTION_LEFT_OPEN');
    expect(error).toBeInstanceOf(TidemarkError);
    expect(error).toMatchObject({ code: 'TIDEMARK_X_TRANSACTION_LEFT_OPEN', retryable: false });
  });

  it('reports reads and writes under the common roundTrips() names', () => {
    const counters = new RoundTripCounters();
    counters.write.operations++;
    counters.write.roundTrips += 3;
    counters.read.operations += 2;
    counters.read.roundTrips += 4;
    expect(counters.snapshot()).toEqual({ writes: 1, roundTrips: 3, reads: 2, readRoundTrips: 4 });
  });
});

describe('parseBase36BigInt', () => {
  it('is exact on both sides of ten digits, where the double fast path ends', () => {
    const edge = 36n ** 10n;
    for (const value of [0n, 35n, edge - 1n, edge, edge + 1n, 2n ** 53n + 1n, 2n ** 64n - 1n]) {
      expect(parseBase36BigInt(value.toString(36))).toBe(value);
    }
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 36n ** 14n }), (value) => {
        expect(parseBase36BigInt(value.toString(36))).toBe(value);
      }),
    );
  });
});
