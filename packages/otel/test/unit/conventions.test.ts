import {
  ConfigError,
  DECISION_REASONS,
  ErrorCode,
  ReplicasBehindError,
  TokenError,
} from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { errorType, routeOutcome } from '../../src/index.js';
import { resolveNodes } from '../../src/nodes.js';

describe('route outcomes', () => {
  it('every decision reason has one of the documented outcomes (error is for thrown reads)', () => {
    const outcomes = new Set(DECISION_REASONS.map(routeOutcome));
    expect([...outcomes].sort()).toEqual(
      ['degraded_stale', 'primary_fallback', 'replica', 'replica_waited', 'shadow'].sort(),
    );
    expect(routeOutcome('shadow')).toBe('shadow');
    expect(routeOutcome('replica-waited')).toBe('replica_waited');
    expect(routeOutcome('primary-no-replica')).toBe('primary_fallback');
  });
});

describe('error.type', () => {
  it('is the stable code of Tidemark errors, else the class name, never the message', () => {
    expect(errorType(new ReplicasBehindError('main', undefined, 3))).toBe(ErrorCode.ReplicasBehind);
    expect(errorType(new TokenError(ErrorCode.TokenMalformed, 'secret token text'))).toBe(
      ErrorCode.TokenMalformed,
    );
    expect(errorType(new TypeError('x'))).toBe('TypeError');
    expect(errorType(new Error('x'))).toBe('_OTHER');
    expect(errorType('x')).toBe('_OTHER');
  });
});

describe('nodes', () => {
  it('keeps host and port of a URL, never its credentials', () => {
    const nodes = resolveNodes({
      primary: 'postgres://app:s3cret@db1.internal:6432/shop',
      r1: 'mysql://root@[::1]:3307/db',
      r2: 'postgres://db3/shop',
      r3: { address: '/tmp/.s.PGSQL.5432' },
    });
    expect(nodes.get('primary')).toEqual({ address: 'db1.internal', port: 6432 });
    expect(nodes.get('r1')).toEqual({ address: '::1', port: 3307 });
    expect(nodes.get('r2')).toEqual({ address: 'db3', port: undefined });
    expect(nodes.get('r3')).toEqual({ address: '/tmp/.s.PGSQL.5432', port: undefined });
  });

  it('bad entries are a ConfigError that does not quote the URL', () => {
    const error = (() => {
      try {
        resolveNodes({ primary: 'not a url with s3cret' });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe(ErrorCode.Config);
    expect((error as Error).message).not.toContain('s3cret');
    expect(() => resolveNodes({ r1: { address: 'db', port: 70000 } })).toThrow(ConfigError);
    expect(() => resolveNodes({ r1: { address: '' } })).toThrow(ConfigError);
  });
});
