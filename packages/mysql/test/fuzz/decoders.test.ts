/**
 * Fuzzing of every parser and decoder in the package (invariant 8, docs/design.md): random text over the
 * characters that matter, mutations of valid inputs, non-strings and huge inputs. The only
 * acceptable outcomes are a value or a TokenError with code TIDEMARK_POSITION_INVALID; whatever
 * decodes must be canonical (token decoders accept exactly one spelling per position), and no
 * call may take long.
 */
import { ErrorCode, TokenError } from '@tidemark/core';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  decodeGtidSetToken,
  decodeMariadbPositionToken,
  encodeGtidSetToken,
  encodeMariadbPositionToken,
  GtidSet,
  MariadbGtidPosition,
} from '../../src/index.js';
import { anySet, mariadbPosition } from '../support/arbitraries.js';

/** Generous: a shared 2-core machine has GC pauses; a slow input is slow on every retry. */
const BOUND_MS = 50;
const RUNS = { numRuns: 2000 };
const tally = new Map<string, { accepted: number; rejected: number; slowestMs: number }>();

type Decoder = (text: string) => unknown;

/** Run `decode`; anything but success or a PositionInvalid TokenError fails the test. */
function attempt(name: string, decode: Decoder, input: unknown): unknown {
  let best = Number.POSITIVE_INFINITY;
  let outcome: { ok: true; value: unknown } | { ok: false; error: unknown } = {
    ok: false,
    error: undefined,
  };
  for (let tries = 0; tries < 3 && best >= BOUND_MS; tries++) {
    const started = performance.now();
    try {
      outcome = { ok: true, value: decode(input as string) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    best = Math.min(best, performance.now() - started);
  }
  const entry = tally.get(name) ?? { accepted: 0, rejected: 0, slowestMs: 0 };
  entry.slowestMs = Math.max(entry.slowestMs, best);
  tally.set(name, entry);
  expect(best).toBeLessThan(BOUND_MS);
  if (outcome.ok) {
    entry.accepted++;
    return outcome.value;
  }
  entry.rejected++;
  expect(outcome.error).toBeInstanceOf(TokenError);
  expect((outcome.error as TokenError).code).toBe(ErrorCode.PositionInvalid);
  return undefined;
}

/** Character soup biased toward what the formats use. */
function soup(alphabet: string, maxLength = 80): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ unit: fc.constantFrom(...alphabet), maxLength }),
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
  );
}

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'insert'; at: number; text: string }
  | { kind: 'duplicate'; at: number; length: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'splice'; at: number; donorAt: number };

function mutation(inserts: string): fc.Arbitrary<Mutation> {
  return fc.oneof(
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.nat(6) }),
    fc.record({
      kind: fc.constant('delete' as const),
      at: fc.nat(),
      length: fc.integer({ min: 1, max: 6 }),
    }),
    fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat(),
      text: fc.oneof(fc.constantFrom(...inserts), fc.string({ maxLength: 4 })),
    }),
    fc.record({
      kind: fc.constant('duplicate' as const),
      at: fc.nat(),
      length: fc.integer({ min: 1, max: 30 }),
    }),
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({ kind: fc.constant('splice' as const), at: fc.nat(), donorAt: fc.nat() }),
  );
}

function mutate(text: string, donor: string, change: Mutation): string {
  const at = change.at % (text.length + 1);
  switch (change.kind) {
    case 'flip': {
      if (text.length === 0) return text;
      const i = change.at % text.length;
      return (
        text.slice(0, i) +
        String.fromCharCode(text.charCodeAt(i) ^ (1 << change.bit)) +
        text.slice(i + 1)
      );
    }
    case 'delete':
      return text.slice(0, at) + text.slice(at + change.length);
    case 'insert':
      return text.slice(0, at) + change.text + text.slice(at);
    case 'duplicate':
      return (
        text.slice(0, at) +
        text.slice(at, at + change.length).repeat(2) +
        text.slice(at + change.length)
      );
    case 'truncate':
      return text.slice(0, at);
    case 'splice':
      return text.slice(0, at) + donor.slice(change.donorAt % (donor.length + 1));
  }
}

const NON_STRINGS: unknown[] = [
  undefined,
  null,
  0,
  1n,
  true,
  {},
  [],
  ['0'],
  () => '0',
  Symbol('t'),
];

describe('GtidSet.parse (server text)', () => {
  const decode: Decoder = (text) => GtidSet.parse(text);
  const accepted = (value: unknown) => {
    // Whatever parses prints canonical text that parses back to the same set.
    const set = value as GtidSet;
    expect(GtidSet.parse(set.format()).equals(set)).toBe(true);
  };

  it('random text', () => {
    fc.assert(
      fc.property(soup('0123456789abcdefABCDEF-:,_ \n\tTag'), (text) => {
        const value = attempt('parse', decode, text);
        if (value !== undefined) accepted(value);
      }),
      RUNS,
    );
  });

  it('mutations of valid text', () => {
    fc.assert(
      fc.property(anySet, anySet, mutation(':-,_ \n0aZ'), (set, donor, change) => {
        const text = mutate(set.format(), donor.format(), change);
        const value = attempt('parse', decode, text);
        if (value !== undefined) accepted(value);
      }),
      RUNS,
    );
  });

  it('non-strings and huge input', () => {
    for (const value of NON_STRINGS) expect(attempt('parse', decode, value)).toBeUndefined();
    const huge = `3e11fa47-71ca-11e1-9e33-c80aa9429562:${'1:'.repeat(1 << 20)}1`;
    expect(attempt('parse', decode, huge)).toBeUndefined();
  });
});

describe('decodeGtidSetToken', () => {
  const accepted = (text: string, value: unknown) => {
    expect(encodeGtidSetToken(value as GtidSet)).toBe(text);
  };

  it('random text', () => {
    fc.assert(
      fc.property(soup('ABCPQRghwxyz0123456789-_.'), (text) => {
        const value = attempt('token', decodeGtidSetToken, text);
        if (value !== undefined) accepted(text, value);
      }),
      RUNS,
    );
  });

  it('mutations of valid tokens', () => {
    fc.assert(
      fc.property(anySet, anySet, mutation('-_.0aZ'), (set, donor, change) => {
        const text = mutate(encodeGtidSetToken(set), encodeGtidSetToken(donor), change);
        const value = attempt('token', decodeGtidSetToken, text);
        if (value !== undefined) accepted(text, value);
      }),
      RUNS,
    );
  });

  it('non-strings and huge input', () => {
    for (const value of NON_STRINGS)
      expect(attempt('token', decodeGtidSetToken, value)).toBeUndefined();
    expect(
      attempt('token', decodeGtidSetToken, `PhH6R3HKEeGeM8gKqUKVYg1${'_3'.repeat(1 << 20)}`),
    ).toBeUndefined();
  });
});

describe('MariaDB text and tokens', () => {
  const parse: Decoder = (text) => MariadbGtidPosition.parse(text);

  it('random text', () => {
    fc.assert(
      fc.property(soup('0123456789-,. az\n'), (text) => {
        const parsed = attempt('mariadb parse', parse, text) as MariadbGtidPosition | undefined;
        if (parsed)
          expect(MariadbGtidPosition.parse(parsed.format()).format()).toBe(parsed.format());
        const decoded = attempt('mariadb token', decodeMariadbPositionToken, text) as
          | MariadbGtidPosition
          | undefined;
        if (decoded) expect(encodeMariadbPositionToken(decoded)).toBe(text);
      }),
      RUNS,
    );
  });

  it('mutations of valid text and tokens', () => {
    fc.assert(
      fc.property(mariadbPosition, mariadbPosition, mutation('-,.0z9'), (p, donor, change) => {
        const text = mutate(p.format(), donor.format(), change);
        const parsed = attempt('mariadb parse', parse, text) as MariadbGtidPosition | undefined;
        if (parsed)
          expect(MariadbGtidPosition.parse(parsed.format()).format()).toBe(parsed.format());
        const token = mutate(
          encodeMariadbPositionToken(p),
          encodeMariadbPositionToken(donor),
          change,
        );
        const decoded = attempt('mariadb token', decodeMariadbPositionToken, token) as
          | MariadbGtidPosition
          | undefined;
        if (decoded) expect(encodeMariadbPositionToken(decoded)).toBe(token);
      }),
      RUNS,
    );
  });

  it('non-strings and huge input', () => {
    for (const value of NON_STRINGS) {
      expect(attempt('mariadb parse', parse, value)).toBeUndefined();
      expect(attempt('mariadb token', decodeMariadbPositionToken, value)).toBeUndefined();
    }
    expect(attempt('mariadb parse', parse, '0-1-1,'.repeat(1 << 20))).toBeUndefined();
  });
});

afterAll(() => {
  console.info('fuzz tally (accepted / rejected / slowest ms):');
  for (const [name, t] of tally) {
    console.info(`  ${name}: ${t.accepted} / ${t.rejected} / ${t.slowestMs.toFixed(2)}`);
  }
});
