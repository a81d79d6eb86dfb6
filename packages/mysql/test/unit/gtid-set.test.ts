import { ErrorCode, TokenError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { GtidSet, MAX_GNO } from '../../src/index.js';

const A = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
const B = '4e11fa47-71ca-11e1-9e33-c80aa9429562';

function rejects(run: () => unknown): TokenError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(TokenError);
  expect((caught as TokenError).code).toBe(ErrorCode.PositionInvalid);
  return caught as TokenError;
}

describe('GtidSet.parse: the server text forms', () => {
  it('reads gtid_executed as the server prints it (",\\n" between UUIDs)', () => {
    const set = GtidSet.parse(`${A}:1-5:7-9,\n${B}:1-3`);
    expect(set.entries).toEqual([
      {
        uuid: A,
        tag: '',
        intervals: [
          { start: 1n, end: 5n },
          { start: 7n, end: 9n },
        ],
      },
      { uuid: B, tag: '', intervals: [{ start: 1n, end: 3n }] },
    ]);
    expect(set.format()).toBe(`${A}:1-5:7-9,\n${B}:1-3`);
    expect(set.format({ separator: ',' })).toBe(`${A}:1-5:7-9,${B}:1-3`);
  });

  it('accepts uppercase UUIDs and tags and prints them lowercase', () => {
    // The tagged example of the MySQL 8.4 manual ("GTID Format and Storage").
    const set = GtidSet.parse('3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:Domain_1:1-3:11:47-49');
    expect(set.format()).toBe(`${A}:1-5:domain_1:1-3:11:47-49`);
    expect(set.entries.map((e) => e.tag)).toEqual(['', 'domain_1']);
  });

  it('reads tagged-only elements and tags after untagged intervals', () => {
    expect(GtidSet.parse(`${A}:tag:1-5`).format()).toBe(`${A}:tag:1-5`);
    expect(GtidSet.parse(`${A}:1-3:tag:5-7`).format()).toBe(`${A}:1-3:tag:5-7`);
    // Several tags of one UUID print under it, untagged first, tags in byte order (`_` < `a`).
    expect(GtidSet.parse(`${A}:b:1,${A}:_z:2,${A}:3,${A}:a:4`).format()).toBe(
      `${A}:3:_z:2:a:4:b:1`,
    );
  });

  it('sorts UUIDs in byte order and merges repeated UUIDs and overlapping ranges', () => {
    const set = GtidSet.parse(`${B}:9, ${A}:7-9:1-5 ,${A}:6,${B}:10-12:3-3`);
    expect(set.format()).toBe(`${A}:1-9,\n${B}:3:9-12`);
  });

  it('allows whitespace around elements and treats blank text as the empty set', () => {
    expect(GtidSet.parse(` \n${A}:1 ,\r\n\t${B}:2\n`).format()).toBe(`${A}:1,\n${B}:2`);
    expect(GtidSet.parse('').isEmpty).toBe(true);
    expect(GtidSet.parse(' \n\t').isEmpty).toBe(true);
    expect(GtidSet.parse('').format()).toBe('');
    expect(GtidSet.parse('')).toBe(GtidSet.EMPTY);
  });

  it('accepts the largest transaction number MySQL accepts, 2^63-2', () => {
    const set = GtidSet.parse(`${A}:1-9223372036854775806`);
    expect(set.entries[0]?.intervals[0]?.end).toBe(MAX_GNO);
    expect(MAX_GNO).toBe(2n ** 63n - 2n);
    // Past 2^53 JavaScript numbers would round; bigints keep every transaction.
    expect(set.count()).toBe(9223372036854775806n);
    expect(GtidSet.parse(`${A}:9007199254740993`).format()).toBe(`${A}:9007199254740993`);
  });

  it.each([
    ['not a UUID', 'x:1'],
    ['a UUID without numbers', A],
    ['a trailing colon', `${A}:`],
    ['transaction 0', `${A}:0`],
    ['a leading zero', `${A}:01`],
    ['a range without end', `${A}:1-`],
    ['a range without start', `${A}:-1`],
    ['a range that ends before it starts', `${A}:5-3`],
    ['a sign', `${A}:+1`],
    ['hexadecimal', `${A}:0x10`],
    ['whitespace inside an element', `${A}: 1`],
    ['whitespace before the colon', `${A} :1`],
    ['two commas', `${A}:1,,${B}:2`],
    ['a leading comma', `,${A}:1`],
    ['a trailing comma', `${A}:1,`],
    ['a tag without numbers at the end', `${A}:1:tag`],
    ['a tag without numbers', `${A}:tag`],
    ['two tags in a row', `${A}:t1:t2:1`],
    ['a tag starting with a digit', `${A}:1tag:1`],
    ['a tag with a dash', `${A}:ta-g:1`],
    ['a 33-character tag', `${A}:${'t'.repeat(33)}:1`],
    ['a UUID in braces', `{${A}}:1`],
    ['a UUID without dashes', `${A.replaceAll('-', '')}:1`],
    ['a short UUID', `${A.slice(1)}:1`],
    ['2^63-1', `${A}:9223372036854775807`],
    ['a range ending at 2^63-1', `${A}:1-9223372036854775807`],
    ['20 digits', `${A}:99999999999999999999`],
    ['ANONYMOUS', 'ANONYMOUS'],
    ['a leading plus (gtid_purged syntax)', `+${A}:1`],
    ['a NUL character', `${A}:1\u0000`],
    ['non-ASCII digits', `${A}:\u0661`],
    ['a semicolon separator', `${A}:1;${B}:2`],
    ['a quote', `'${A}:1'`],
  ])('rejects %s', (_what, text) => {
    rejects(() => GtidSet.parse(text));
  });

  it('accepts a 32-character tag', () => {
    const tag = `_${'a1'.repeat(15)}9`;
    expect(tag).toHaveLength(32);
    expect(GtidSet.parse(`${A}:${tag}:1`).entries[0]?.tag).toBe(tag);
  });

  it('rejects values that are not strings', () => {
    for (const value of [undefined, null, 42, {}, [], Symbol('x')]) {
      rejects(() => GtidSet.parse(value as unknown as string));
    }
  });

  it('rejects text over maxLength before reading it', () => {
    const text = `${A}:1`;
    expect(GtidSet.parse(text, { maxLength: text.length }).isEmpty).toBe(false);
    const error = rejects(() => GtidSet.parse(text, { maxLength: text.length - 1 }));
    expect(error.message).toContain('over the limit');
    rejects(() => GtidSet.parse(`${A}:${'1:'.repeat(600_000)}1`));
  });

  it('says what was wrong without echoing much of the input', () => {
    const error = rejects(() => GtidSet.parse(`${A}:${'x'.repeat(5000)}`));
    expect(error.message.length).toBeLessThan(300);
    expect(rejects(() => GtidSet.parse(`${A}:0`)).message).toMatch(/transaction number/);
    expect(rejects(() => GtidSet.parse(`${A}:tag`)).message).toMatch(/without any transaction/);
  });
});

describe('GtidSet operations on documented server results', () => {
  // Results of GTID_SUBSET and GTID_SUBTRACT as printed in the MySQL 8.4 manual
  // ("Functions Used with Global Transaction Identifiers").
  const docs = '3E11FA47-71CA-11E1-9E33-C80AA9429562';
  it.each([
    [`${docs}:21-57`, `${docs}:21`, `${A}:22-57`],
    [`${docs}:21-57`, `${docs}:20-25`, `${A}:26-57`],
    [`${docs}:21-57`, `${docs}:23-24`, `${A}:21-22:25-57`],
  ])('GTID_SUBTRACT(%s, %s) = %s', (a, b, expected) => {
    expect(GtidSet.parse(a).subtract(GtidSet.parse(b)).format()).toBe(expected);
  });

  it.each([
    [`${docs}:23`, `${docs}:21-57`, true],
    [`${docs}:23-25`, `${docs}:21-57`, true],
    [`${docs}:20-25`, `${docs}:21-57`, false],
  ])('GTID_SUBSET(%s, %s) = %s', (a, b, expected) => {
    expect(GtidSet.parse(a).isSubsetOf(GtidSet.parse(b))).toBe(expected);
  });
});

describe('GtidSet operations', () => {
  const x = GtidSet.parse(`${A}:1-10:20-30,${B}:5`);
  const y = GtidSet.parse(`${A}:5-25,${B}:t:5`);

  it('union, intersection and subtract keep UUIDs and tags apart', () => {
    expect(x.union(y).format()).toBe(`${A}:1-30,\n${B}:5:t:5`);
    expect(x.intersection(y).format()).toBe(`${A}:5-10:20-25`);
    expect(x.subtract(y).format()).toBe(`${A}:1-4:26-30,\n${B}:5`);
    expect(y.subtract(x).format()).toBe(`${A}:11-19,\n${B}:t:5`);
  });

  it('isSubsetOf, intersects, equals and count', () => {
    expect(GtidSet.parse(`${A}:2-9`).isSubsetOf(x)).toBe(true);
    expect(GtidSet.parse(`${A}:9-20`).isSubsetOf(x)).toBe(false);
    expect(GtidSet.parse(`${B}:t:5`).isSubsetOf(x)).toBe(false);
    expect(GtidSet.EMPTY.isSubsetOf(GtidSet.EMPTY)).toBe(true);
    expect(x.intersects(y)).toBe(true);
    expect(GtidSet.parse(`${A}:11-19`).intersects(x)).toBe(false);
    expect(GtidSet.parse(`${B}:t:5`).intersects(GtidSet.parse(`${B}:5`))).toBe(false);
    expect(x.equals(GtidSet.parse(`${B}:5,${A}:20-30:1-10`))).toBe(true);
    expect(x.equals(y)).toBe(false);
    expect(x.count()).toBe(22n);
    expect(GtidSet.EMPTY.count()).toBe(0n);
    expect(x.uuids()).toEqual([A, B]);
    expect(y.uuids()).toEqual([A, B]);
  });

  it('is immutable', () => {
    expect(Object.isFrozen(x.entries)).toBe(true);
    expect(Object.isFrozen(x.entries[0])).toBe(true);
    expect(Object.isFrozen(x.entries[0]?.intervals)).toBe(true);
    expect(Object.isFrozen(x.entries[0]?.intervals[0])).toBe(true);
    expect(() => {
      (x.entries as unknown as unknown[]).push({});
    }).toThrow(TypeError);
  });

  it('cannot be constructed around the normal form', () => {
    const Unchecked = GtidSet as unknown as new (entries: unknown[], origin: symbol) => GtidSet;
    expect(() => new Unchecked([], Symbol('normalised GTID set entries'))).toThrow(TypeError);
  });

  it('serialises to JSON as one-line server text', () => {
    expect(JSON.stringify({ position: x })).toBe(`{"position":"${A}:1-10:20-30,${B}:5"}`);
  });
});

describe('GtidSet.fromEntries', () => {
  it('normalises entries given in any order, with numbers or bigints', () => {
    const set = GtidSet.fromEntries([
      { uuid: B.toUpperCase(), intervals: [{ start: 3, end: 4 }] },
      {
        uuid: A,
        tag: 'T',
        intervals: [
          { start: 5n, end: 6n },
          { start: 1n, end: 4n },
        ],
      },
      { uuid: B, tag: '', intervals: [{ start: 1, end: 2 }] },
      { uuid: A, intervals: [] },
    ]);
    expect(set.format()).toBe(`${A}:t:1-6,\n${B}:1-4`);
  });

  it.each([
    ['a bad UUID', { uuid: 'nope', intervals: [{ start: 1, end: 1 }] }],
    ['a bad tag', { uuid: A, tag: '9x', intervals: [{ start: 1, end: 1 }] }],
    ['transaction 0', { uuid: A, intervals: [{ start: 0, end: 1 }] }],
    ['an inverted range', { uuid: A, intervals: [{ start: 5, end: 4 }] }],
    ['a number above 2^63-2', { uuid: A, intervals: [{ start: 1n, end: 2n ** 63n - 1n }] }],
    ['an unsafe integer', { uuid: A, intervals: [{ start: 1, end: 2 ** 53 }] }],
    ['a fraction', { uuid: A, intervals: [{ start: 1.5, end: 2 }] }],
  ])('rejects %s', (_what, entry) => {
    rejects(() => GtidSet.fromEntries([entry]));
  });
});
