/**
 * Laws of the MariaDB codec on random positions: round trips, merge as least upper bound, and a
 * comparison consistent with merge and with itself.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createMariadbCodec,
  type MariadbGtidPosition,
  MariadbGtidPosition as Position,
} from '../../src/index.js';
import { mariadbPosition } from '../support/arbitraries.js';

const codec = createMariadbCodec();
const RUNS = { numRuns: 500 };

/** Two positions conflict when a shared domain has equal numbers from different servers. */
function conflict(a: MariadbGtidPosition, b: MariadbGtidPosition): boolean {
  return a.gtids.some((g) => {
    const other = b.domain(g.domain);
    return other !== undefined && other.seq === g.seq && other.server !== g.server;
  });
}

/** Lower one domain's number by one: the result no longer covers what needed that number. */
function lowered(p: MariadbGtidPosition, index: number): MariadbGtidPosition | undefined {
  const target = p.gtids[index % Math.max(1, p.gtids.length)];
  if (target === undefined || target.seq === 0n) return undefined;
  return Position.fromGtids(p.gtids.map((g) => (g === target ? { ...g, seq: g.seq - 1n } : g)));
}

describe('MariaDB positions', () => {
  it('round trip through server text and token text', () => {
    fc.assert(
      fc.property(mariadbPosition, (p) => {
        expect(Position.parse(p.format()).format()).toBe(p.format());
        const token = codec.encode(p);
        expect(token).toMatch(/^[A-Za-z0-9_.-]+$/);
        expect(codec.decode(token).format()).toBe(p.format());
        expect(codec.encode(codec.decode(token))).toBe(token);
      }),
      RUNS,
    );
  });

  it('merge is commutative, associative and idempotent', () => {
    fc.assert(
      fc.property(mariadbPosition, mariadbPosition, mariadbPosition, (a, b, c) => {
        expect(codec.merge(a, b).format()).toBe(codec.merge(b, a).format());
        expect(codec.merge(codec.merge(a, b), c).format()).toBe(
          codec.merge(a, codec.merge(b, c)).format(),
        );
        expect(codec.merge(a, a).format()).toBe(a.format());
      }),
      RUNS,
    );
  });

  it('merge is an upper bound: it covers both, unless they come from different histories', () => {
    fc.assert(
      fc.property(mariadbPosition, mariadbPosition, (a, b) => {
        const m = codec.merge(a, b);
        if (conflict(a, b)) {
          // No upper bound exists; the merge must still never be merely "behind" either side.
          expect(codec.compare(m, a)).not.toBe('behind');
          expect(codec.compare(m, b)).not.toBe('behind');
          expect([codec.compare(m, a), codec.compare(m, b)]).toContain('other-history');
        } else {
          expect(codec.compare(m, a)).toBe('covered');
          expect(codec.compare(m, b)).toBe('covered');
        }
      }),
      RUNS,
    );
  });

  it('merge is the least upper bound: anything covering both covers the merge', () => {
    fc.assert(
      fc.property(mariadbPosition, mariadbPosition, mariadbPosition, (a, b, c) => {
        fc.pre(!conflict(a, b));
        // c is random, or made to cover both by merging it in (which may add more domains).
        for (const candidate of [c, codec.merge(codec.merge(a, b), c)]) {
          const coversBoth =
            codec.compare(candidate, a) === 'covered' && codec.compare(candidate, b) === 'covered';
          if (coversBoth) expect(codec.compare(candidate, codec.merge(a, b))).toBe('covered');
        }
      }),
      RUNS,
    );
  });

  it('merge is least: lowering any domain of it uncovers a or b', () => {
    fc.assert(
      fc.property(mariadbPosition, mariadbPosition, fc.nat(), (a, b, index) => {
        fc.pre(!conflict(a, b));
        const smaller = lowered(codec.merge(a, b), index);
        fc.pre(smaller !== undefined);
        const still = [
          codec.compare(smaller as MariadbGtidPosition, a),
          codec.compare(smaller as MariadbGtidPosition, b),
        ];
        expect(still).toContain('behind');
      }),
      RUNS,
    );
  });

  it('compare is reflexive, consistent with merge, and transitive', () => {
    fc.assert(
      fc.property(mariadbPosition, mariadbPosition, mariadbPosition, (a, b, c) => {
        expect(codec.compare(a, a)).toBe('covered');
        if (!conflict(a, b)) {
          expect(codec.compare(a, b) === 'covered').toBe(codec.merge(a, b).format() === a.format());
        }
        // Random triples rarely chain, so also build a chain by merging downwards.
        const b2 = codec.merge(b, c);
        const a2 = codec.merge(a, b2);
        for (const [x, y, z] of [
          [a, b, c],
          [a2, b2, c],
        ] as const) {
          if (codec.compare(x, y) === 'covered' && codec.compare(y, z) === 'covered') {
            expect(codec.compare(x, z)).toBe('covered');
          }
        }
      }),
      RUNS,
    );
  });

  it('without strict mode, merge is an upper bound even for conflicting positions', () => {
    const lenient = createMariadbCodec({ strictMode: false });
    fc.assert(
      fc.property(mariadbPosition, mariadbPosition, (a, b) => {
        const m = lenient.merge(a, b);
        expect(lenient.compare(m, a)).toBe('covered');
        expect(lenient.compare(m, b)).toBe('covered');
      }),
      RUNS,
    );
  });
});
