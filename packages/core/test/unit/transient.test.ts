import { describe, expect, it } from 'vitest';
import { isSocketError, someErrorInChain } from '../../src/adapter-kit/index.js';

const socket = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

describe('isSocketError', () => {
  it('recognises Node socket codes directly, in cause chains and inside AggregateError', () => {
    expect(isSocketError(socket('ECONNREFUSED'))).toBe(true);
    expect(isSocketError(new Error('wrapped', { cause: socket('ECONNRESET') }))).toBe(true);
    expect(isSocketError(new AggregateError([new Error('a'), socket('EHOSTUNREACH')]))).toBe(true);
  });

  it('says no to query errors, non-errors and unknown codes', () => {
    expect(isSocketError(Object.assign(new Error('syntax'), { code: '42601' }))).toBe(false);
    expect(isSocketError(new Error('plain'))).toBe(false);
    expect(isSocketError('ECONNREFUSED')).toBe(false);
    expect(isSocketError(undefined)).toBe(false);
  });
});

describe('someErrorInChain', () => {
  it('stops on cyclic cause chains', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    let visits = 0;
    expect(
      someErrorInChain(a, () => {
        visits++;
        return false;
      }),
    ).toBe(false);
    expect(visits).toBeLessThan(10);
  });
});
