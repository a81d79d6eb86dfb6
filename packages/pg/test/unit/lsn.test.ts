import { ErrorCode, TokenError } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatLsn, MAX_LSN, parseLsn } from '../../src/lsn.js';

const lsnArb = fc.bigInt({ min: 0n, max: MAX_LSN });

function expectPositionInvalid(run: () => unknown): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TokenError);
    expect((error as TokenError).code).toBe(ErrorCode.PositionInvalid);
    return;
  }
  throw new Error('expected a TokenError');
}

describe('parseLsn / formatLsn', () => {
  it('parses the forms PostgreSQL 15, 18 and 19 print', () => {
    expect(parseLsn('0/3A1F2C8')).toBe(0x3a1f2c8n);
    expect(parseLsn('0/030314D0')).toBe(0x30314d0n);
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) | 0xb374d848n);
    expect(parseLsn('FFFFFFFF/FFFFFFFF')).toBe(MAX_LSN);
    expect(parseLsn('0/0')).toBe(0n);
    expect(parseLsn('a/b')).toBe((0xan << 32n) | 0xbn);
  });

  it('formats uppercase without zero padding', () => {
    expect(formatLsn(0x30314d0n)).toBe('0/30314D0');
    expect(formatLsn((0x16n << 32n) | 0xb374d848n)).toBe('16/B374D848');
    expect(formatLsn(0n)).toBe('0/0');
    expect(formatLsn(MAX_LSN)).toBe('FFFFFFFF/FFFFFFFF');
  });

  it.each([
    '',
    '0',
    '/0',
    '0/',
    '0//0',
    ' 0/0',
    '0/0 ',
    '-1/0',
    '0x1/0',
    '1/123456789',
    '123456789/1',
    '0/G',
    "0/0'; DROP TABLE t; --",
    '0/0\n',
  ])('rejects %j', (text) => {
    expectPositionInvalid(() => parseLsn(text));
  });

  it('rejects non-strings', () => {
    expectPositionInvalid(() => parseLsn(42 as unknown as string));
  });

  it('rejects LSNs outside 64 bits when formatting', () => {
    expectPositionInvalid(() => formatLsn(-1n));
    expectPositionInvalid(() => formatLsn(MAX_LSN + 1n));
  });

  it('round-trips every 64-bit value and keeps order', () => {
    fc.assert(
      fc.property(lsnArb, (lsn) => {
        const text = formatLsn(lsn);
        expect(text).toMatch(/^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/);
        expect(parseLsn(text)).toBe(lsn);
        expect(parseLsn(text.toLowerCase())).toBe(lsn);
      }),
    );
  });

  it('accepts zero padding of either half, as PostgreSQL 19 prints', () => {
    fc.assert(
      fc.property(lsnArb, (lsn) => {
        const [high, low] = formatLsn(lsn).split('/') as [string, string];
        expect(parseLsn(`${high.padStart(8, '0')}/${low.padStart(8, '0')}`)).toBe(lsn);
      }),
    );
  });
});
