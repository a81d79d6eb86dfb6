import { ErrorCode, TokenError } from '@tidemark/core';
import { POSITION_TEXT_PATTERN } from '@tidemark/core/adapter';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeGtidSetToken,
  encodeGtidSetToken,
  GtidSet,
  MAX_GTID_TOKEN_LENGTH,
} from '../../src/index.js';

const A = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
const B = '4e11fa47-71ca-11e1-9e33-c80aa9429562';
/** A's 16 bytes in base64url, computed by Node itself rather than by the code under test. */
const A64 = Buffer.from(A.replaceAll('-', ''), 'hex').toString('base64url');
const B64 = Buffer.from(B.replaceAll('-', ''), 'hex').toString('base64url');

function rejects(text: unknown): void {
  let caught: unknown;
  try {
    decodeGtidSetToken(text as string);
  } catch (error) {
    caught = error;
  }
  expect(caught, `accepted ${JSON.stringify(text)}`).toBeInstanceOf(TokenError);
  expect((caught as TokenError).code).toBe(ErrorCode.PositionInvalid);
}

describe('GTID set token form', () => {
  it('writes the UUID as 22 base64url characters and numbers in base 36', () => {
    expect(A64).toBe('PhH6R3HKEeGeM8gKqUKVYg');
    const set = GtidSet.parse(`${A}:1-12345`);
    expect(encodeGtidSetToken(set)).toBe(`${A64}1-${(12345).toString(36)}`);
    expect(encodeGtidSetToken(set)).toBe('PhH6R3HKEeGeM8gKqUKVYg1-9ix');
  });

  it('writes single numbers, gaps, tags and several UUIDs', () => {
    const set = GtidSet.parse(`${A}:1-5:7:t_1:3-4,${B}:40`);
    expect(encodeGtidSetToken(set)).toBe(`${A64}1-5_7.${A64}-t_1-3-4.${B64}14`);
    expect(encodeGtidSetToken(GtidSet.EMPTY)).toBe('0');
    expect(decodeGtidSetToken('0')).toBe(GtidSet.EMPTY);
  });

  it('agrees with Node base64url for random UUIDs', () => {
    fc.assert(
      fc.property(fc.uuid({ version: [1, 2, 3, 4, 5, 6, 7, 8] }), (uuid) => {
        const token = encodeGtidSetToken(GtidSet.parse(`${uuid}:1`));
        const expected = Buffer.from(uuid.replaceAll('-', ''), 'hex').toString('base64url');
        expect(token).toBe(`${expected}1`);
        expect(decodeGtidSetToken(token).format()).toBe(`${uuid.toLowerCase()}:1`);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps typical tokens short', () => {
    const lengths = {
      oneUuidSmall: encodeGtidSetToken(GtidSet.parse(`${A}:1-42`)).length,
      oneUuidMillion: encodeGtidSetToken(GtidSet.parse(`${A}:1-1000000`)).length,
      oneUuidBillion: encodeGtidSetToken(GtidSet.parse(`${A}:1-1000000000`)).length,
      oneUuidMax: encodeGtidSetToken(GtidSet.parse(`${A}:1-9223372036854775806`)).length,
      twoUuids: encodeGtidSetToken(GtidSet.parse(`${A}:1-1000000,${B}:1-5000`)).length,
      threeGaps: encodeGtidSetToken(GtidSet.parse(`${A}:1-1000:1002-5000:5002-900000`)).length,
    };
    expect(lengths).toEqual({
      oneUuidSmall: 22 + 4,
      oneUuidMillion: 22 + 6,
      oneUuidBillion: 22 + 8,
      oneUuidMax: 22 + 15,
      twoUuids: 22 + 6 + 1 + 22 + 5,
      threeGaps: 22 + 4 + 1 + 6 + 1 + 8,
    });
    expect(lengths.oneUuidMillion).toBeLessThan(60);
    console.info('MySQL token lengths (characters):', lengths);
  });

  it('produces text core accepts inside tokens', () => {
    expect(encodeGtidSetToken(GtidSet.parse(`${A}:1-5:x:7,${B}:9`))).toMatch(POSITION_TEXT_PATTERN);
  });

  it.each([
    ['empty text', ''],
    ['a non-string', 42],
    ['null', null],
    ['leading zeros as empty', '00'],
    ['a UUID alone', A64],
    ['a short UUID', `${A64.slice(1)}1`],
    ['non-zero padding bits in the UUID', `${A64.slice(0, 21)}h1`],
    ['a character outside base64url in the UUID', `${A64.slice(0, 5)}+${A64.slice(6)}1`],
    ['transaction 0', `${A64}0`],
    ['a leading zero', `${A64}01`],
    ['a single number written as a range', `${A64}1-1`],
    ['an inverted range', `${A64}5-1`],
    ['touching ranges', `${A64}1-5_6-9`],
    ['overlapping ranges', `${A64}1-5_3-9`],
    ['unsorted ranges', `${A64}7_1-5`],
    ['a three-part range', `${A64}1-2-3`],
    ['an empty range', `${A64}1__3`],
    ['uppercase base 36', `${A64}1-9IX`],
    ['2^63-1', `${A64}${(2n ** 63n - 1n).toString(36)}`],
    ['a 14-digit number', `${A64}1${'0'.repeat(13)}`],
    ['unsorted UUIDs', `${B64}1.${A64}1`],
    ['a repeated UUID', `${A64}1.${A64}3`],
    ['a tag before the untagged group', `${A64}-t-1.${A64}3`],
    ['unsorted tags', `${A64}-b-1.${A64}-a-1`],
    ['an uppercase tag', `${A64}-T-1`],
    ['an empty tag', `${A64}--1`],
    ['an unterminated tag', `${A64}-t`],
    ['a tag without numbers', `${A64}-t-`],
    ['a tag starting with a digit', `${A64}-1t-1`],
    ['a trailing dot', `${A64}1.`],
    ['a double dot', `${A64}1..${B64}1`],
    ['the empty set plus more', `0.${A64}1`],
    ['a colon', `${A64}:1`],
    ['a tilde', `${A64}1~`],
    ['a space', `${A64}1 `],
    ['server text', `${A}:1`],
    ['a MariaDB position', '0-1-9'],
    ['text over the length limit', `${A64}1${'_3'.repeat(MAX_GTID_TOKEN_LENGTH)}`],
  ])('rejects %s', (_what, text) => {
    rejects(text);
  });
});
