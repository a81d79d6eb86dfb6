/**
 * Laws of the GTID set algebra and its codecs, on random sets: round trips of the server text and
 * the token form, lattice laws of union/intersection, subtraction identities, and agreement with
 * a brute-force model (a Set of single transactions) on small ranges.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeGtidSetToken, encodeGtidSetToken, GtidSet } from '../../src/index.js';
import {
  anySet,
  expand,
  messyText,
  model,
  smallRanges,
  toSet,
  wideRanges,
} from '../support/arbitraries.js';

const RUNS = { numRuns: 400 };

function same(a: GtidSet, b: GtidSet): void {
  // equals() is under test too, so also compare the canonical text.
  expect(a.format()).toBe(b.format());
  expect(a.equals(b)).toBe(true);
}

describe('text and token round trips', () => {
  it('parse(format(s)) equals s, for both separators', () => {
    fc.assert(
      fc.property(anySet, (set) => {
        same(GtidSet.parse(set.format()), set);
        same(GtidSet.parse(set.format({ separator: ',' })), set);
        same(GtidSet.parse(set.toJSON()), set);
      }),
      RUNS,
    );
  });

  it('format(parse(t)) is the canonical text for messy server-like text', () => {
    const rangesWithText = fc
      .oneof(smallRanges(), wideRanges())
      .chain((ranges) => messyText(ranges).map((text) => ({ ranges, text })));
    fc.assert(
      fc.property(rangesWithText, ({ ranges, text }) => {
        const parsed = GtidSet.parse(text);
        same(parsed, toSet(ranges));
        expect(GtidSet.parse(parsed.format()).format()).toBe(parsed.format());
      }),
      RUNS,
    );
  });

  it('decode(encode(s)) equals s and the token uses only URL-safe characters', () => {
    fc.assert(
      fc.property(anySet, (set) => {
        const token = encodeGtidSetToken(set);
        expect(token).toMatch(/^[A-Za-z0-9_.-]+$/);
        same(decodeGtidSetToken(token), set);
        expect(encodeGtidSetToken(decodeGtidSetToken(token))).toBe(token);
      }),
      RUNS,
    );
  });

  it('equal sets have equal tokens and unequal sets different ones', () => {
    fc.assert(
      fc.property(anySet, anySet, (a, b) => {
        expect(encodeGtidSetToken(a) === encodeGtidSetToken(b)).toBe(a.equals(b));
        expect(a.format() === b.format()).toBe(a.equals(b));
      }),
      RUNS,
    );
  });
});

describe('lattice laws', () => {
  it('union is commutative, associative and idempotent', () => {
    fc.assert(
      fc.property(anySet, anySet, anySet, (a, b, c) => {
        same(a.union(b), b.union(a));
        same(a.union(b).union(c), a.union(b.union(c)));
        same(a.union(a), a);
        same(a.union(GtidSet.EMPTY), a);
      }),
      RUNS,
    );
  });

  it('intersection is commutative, associative, idempotent and absorbs union', () => {
    fc.assert(
      fc.property(anySet, anySet, anySet, (a, b, c) => {
        same(a.intersection(b), b.intersection(a));
        same(a.intersection(b).intersection(c), a.intersection(b.intersection(c)));
        same(a.intersection(a), a);
        same(a.intersection(a.union(b)), a);
        same(a.union(a.intersection(b)), a);
      }),
      RUNS,
    );
  });

  it('a and b are subsets of a ∪ b, and a ∩ b of both', () => {
    fc.assert(
      fc.property(anySet, anySet, (a, b) => {
        const union = a.union(b);
        expect(a.isSubsetOf(union)).toBe(true);
        expect(b.isSubsetOf(union)).toBe(true);
        expect(a.intersection(b).isSubsetOf(a)).toBe(true);
        expect(a.intersection(b).isSubsetOf(b)).toBe(true);
        // Subset order agrees with the lattice operations.
        expect(a.isSubsetOf(b)).toBe(a.union(b).equals(b));
        expect(a.isSubsetOf(b)).toBe(a.intersection(b).equals(a));
        expect(a.isSubsetOf(b)).toBe(a.subtract(b).isEmpty);
      }),
      RUNS,
    );
  });

  it('(a − b) ∩ b = ∅ and (a − b) ∪ (a ∩ b) = a', () => {
    fc.assert(
      fc.property(anySet, anySet, (a, b) => {
        const difference = a.subtract(b);
        expect(difference.intersection(b).isEmpty).toBe(true);
        expect(difference.intersects(b)).toBe(false);
        same(difference.union(a.intersection(b)), a);
        expect(difference.isSubsetOf(a)).toBe(true);
      }),
      RUNS,
    );
  });

  it('intersects agrees with a non-empty intersection', () => {
    fc.assert(
      fc.property(anySet, anySet, (a, b) => {
        expect(a.intersects(b)).toBe(!a.intersection(b).isEmpty);
        expect(a.intersects(b)).toBe(b.intersects(a));
      }),
      RUNS,
    );
  });

  it('count is additive: |a ∪ b| = |a| + |b| − |a ∩ b|', () => {
    fc.assert(
      fc.property(anySet, anySet, (a, b) => {
        expect(a.union(b).count()).toBe(a.count() + b.count() - a.intersection(b).count());
      }),
      RUNS,
    );
  });
});

describe('agreement with a brute-force set model (small ranges)', () => {
  const pair = fc.tuple(smallRanges(), smallRanges());

  it('union, intersection, subtract, subset, intersects, equals and count', () => {
    fc.assert(
      fc.property(pair, ([ra, rb]) => {
        const a = toSet(ra);
        const b = toSet(rb);
        const ma = model(ra);
        const mb = model(rb);
        expect(expand(a)).toEqual(ma);
        expect(a.count()).toBe(BigInt(ma.size));
        expect(expand(a.union(b))).toEqual(new Set([...ma, ...mb]));
        expect(expand(a.intersection(b))).toEqual(new Set([...ma].filter((x) => mb.has(x))));
        expect(expand(a.subtract(b))).toEqual(new Set([...ma].filter((x) => !mb.has(x))));
        expect(a.isSubsetOf(b)).toBe([...ma].every((x) => mb.has(x)));
        expect(a.intersects(b)).toBe([...ma].some((x) => mb.has(x)));
        expect(a.equals(b)).toBe(ma.size === mb.size && [...ma].every((x) => mb.has(x)));
      }),
      { numRuns: 1000 },
    );
  });

  it('normal form: sorted entries, intervals sorted with gaps, no empty entries', () => {
    fc.assert(
      fc.property(smallRanges(), (ranges) => {
        const set = toSet(ranges);
        const keys = set.entries.map((e) => [e.uuid, e.tag] as const);
        const sorted = [...keys].sort(([u1, t1], [u2, t2]) =>
          u1 === u2 ? (t1 < t2 ? -1 : t1 > t2 ? 1 : 0) : u1 < u2 ? -1 : 1,
        );
        expect(keys).toEqual(sorted);
        expect(new Set(keys.map(([u, t]) => `${u}:${t}`)).size).toBe(keys.length);
        for (const entry of set.entries) {
          expect(entry.intervals.length).toBeGreaterThan(0);
          entry.intervals.forEach((range, i) => {
            expect(range.start <= range.end).toBe(true);
            const previous = entry.intervals[i - 1];
            if (previous) expect(range.start > previous.end + 1n).toBe(true);
          });
        }
      }),
      RUNS,
    );
  });
});
