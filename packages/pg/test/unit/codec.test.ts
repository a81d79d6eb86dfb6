import { ErrorCode, TokenError } from '@tidemark/core';
import { POSITION_TEXT_PATTERN } from '@tidemark/core/adapter';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPgCodec, type PgPosition } from '../../src/codec.js';
import { MAX_LSN } from '../../src/lsn.js';
import { TimelineHistory } from '../../src/timeline-history.js';

// Math.max/min do not take bigints.
const maxOf = (a: bigint, b: bigint): bigint => (a > b ? a : b);
const minOf = (a: bigint, b: bigint): bigint => (a < b ? a : b);

const timelineArb = fc.integer({ min: 1, max: 0xffffffff });
const lsnArb = fc.bigInt({ min: 0n, max: MAX_LSN });
const positionArb = fc.record({ timeline: timelineArb, lsn: lsnArb });

/**
 * A random timeline tree: timeline t > 1 branched off a random older parent at a switch point
 * no earlier than where the parent itself began (as PostgreSQL requires), and positions on it.
 */
const treeArb = fc
  .integer({ min: 1, max: 6 })
  .chain((count) =>
    fc.tuple(
      fc.constant(count),
      fc.array(fc.tuple(fc.nat(), fc.bigInt({ min: 0n, max: 1000n })), {
        minLength: count - 1,
        maxLength: count - 1,
      }),
    ),
  )
  .map(([count, raw]) => {
    const history = new TimelineHistory();
    const start = new Map<number, bigint>([[1, 0n]]);
    for (let timeline = 2; timeline <= count; timeline++) {
      const [parentPick, offset] = raw[timeline - 2] as [number, bigint];
      const parent = (parentPick % (timeline - 1)) + 1;
      const switchpoint = (start.get(parent) as bigint) + offset;
      history.record(timeline, parent, switchpoint);
      start.set(timeline, switchpoint);
    }
    return { history, count };
  });

const treeWithPositionsArb = treeArb.chain(({ history, count }) => {
  const position = fc.record({
    timeline: fc.integer({ min: 1, max: count }),
    lsn: fc.bigInt({ min: 0n, max: 3000n }),
  });
  return fc.record({
    history: fc.constant(history),
    a: position,
    b: position,
    c: position,
  });
});

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

describe('createPgCodec: encoding', () => {
  const codec = createPgCodec();

  it('encodes compactly with URL-safe characters and round-trips', () => {
    expect(codec.encode({ timeline: 1, lsn: 0x3a1f2c8n })).toBe(`1.${(0x3a1f2c8).toString(36)}`);
    fc.assert(
      fc.property(positionArb, (position) => {
        const text = codec.encode(position);
        expect(text).toMatch(POSITION_TEXT_PATTERN);
        expect(text.length).toBeLessThanOrEqual(21);
        expect(codec.decode(text)).toEqual(position);
      }),
    );
  });

  it('decodes exactly on both sides of ten base-36 digits (the double fast path)', () => {
    const edge = 36n ** 10n;
    for (const lsn of [0n, 1n, edge - 2n, edge - 1n, edge, edge + 1n, 2n ** 53n + 1n, MAX_LSN]) {
      expect(codec.decode(codec.encode({ timeline: 7, lsn }))).toEqual({ timeline: 7, lsn });
    }
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 36n ** 11n }), (lsn) => {
        expect(codec.decode(codec.encode({ timeline: 1, lsn })).lsn).toBe(lsn);
      }),
    );
  });

  it('accepts only canonical text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (text) => {
        let decoded: PgPosition;
        try {
          decoded = codec.decode(text);
        } catch (error) {
          expect((error as TokenError).code).toBe(ErrorCode.PositionInvalid);
          return;
        }
        expect(codec.encode(decoded)).toBe(text);
      }),
    );
  });

  it.each([
    '',
    '1',
    '1.',
    '.1',
    '0.1',
    '01.1',
    '1.01',
    '1.A',
    '1.-1',
    '1.1.1',
    // 2^64 in base 36: one past the largest LSN.
    `1.${(MAX_LSN + 1n).toString(36)}`,
    // 2^32 in base 36: one past the largest timeline.
    `${(2 ** 32).toString(36)}.1`,
    `1.${'z'.repeat(14)}`,
  ])('rejects %j', (text) => {
    expectPositionInvalid(() => codec.decode(text));
  });

  it('refuses to encode impossible positions', () => {
    expectPositionInvalid(() => codec.encode({ timeline: 0, lsn: 1n }));
    expectPositionInvalid(() => codec.encode({ timeline: 1.5, lsn: 1n }));
    expectPositionInvalid(() => codec.encode({ timeline: 1, lsn: -1n }));
    expectPositionInvalid(() => codec.encode({ timeline: 1, lsn: MAX_LSN + 1n }));
  });
});

describe('createPgCodec: compare and merge on one timeline', () => {
  const codec = createPgCodec();

  it('is consistent with bigint order', () => {
    fc.assert(
      fc.property(timelineArb, lsnArb, lsnArb, (timeline, x, y) => {
        const relation = codec.compare({ timeline, lsn: x }, { timeline, lsn: y });
        expect(relation).toBe(x >= y ? 'covered' : 'behind');
      }),
    );
  });

  it('merges to the larger LSN', () => {
    fc.assert(
      fc.property(timelineArb, lsnArb, lsnArb, (timeline, x, y) => {
        expect(codec.merge({ timeline, lsn: x }, { timeline, lsn: y })).toEqual({
          timeline,
          lsn: maxOf(x, y),
        });
      }),
    );
  });
});

describe('createPgCodec: timelines', () => {
  // Timeline 2 began at 0/5000000 when timeline 1 was promoted away from.
  const switchpoint = 0x5000000n;
  const history = new TimelineHistory([[2, { parent: 1, switchpoint }]]);
  const codec = createPgCodec(history);

  it('covers a write from before the switch point on the new timeline', () => {
    expect(codec.compare({ timeline: 2, lsn: 0x5000100n }, { timeline: 1, lsn: 0x4ffff00n })).toBe(
      'covered',
    );
    expect(
      codec.compare({ timeline: 2, lsn: switchpoint }, { timeline: 1, lsn: switchpoint }),
    ).toBe('covered');
  });

  it('never covers a write past the switch point (lost in the failover)', () => {
    const lost = { timeline: 1, lsn: switchpoint + 1n };
    expect(codec.compare({ timeline: 2, lsn: MAX_LSN }, lost)).toBe('other-history');
    // A replica still replaying timeline 1 past the switch point diverged: no waiting on it.
    expect(codec.compare(lost, { timeline: 2, lsn: switchpoint + 100n })).toBe('other-history');
  });

  it('waits on a replica of the old timeline that can still follow the new one', () => {
    expect(codec.compare({ timeline: 1, lsn: 0x4000000n }, { timeline: 2, lsn: 0x5000100n })).toBe(
      'behind',
    );
  });

  it('does not count a replica on the new timeline as covered before it replayed the write', () => {
    // A replica already receiving timeline 2 but still replaying below the write on timeline 1.
    expect(codec.compare({ timeline: 2, lsn: 0x4000000n }, { timeline: 1, lsn: 0x4800000n })).toBe(
      'behind',
    );
  });

  it('never covers across timelines whose history is unknown', () => {
    const blind = createPgCodec();
    fc.assert(
      fc.property(positionArb, positionArb, (a, b) => {
        fc.pre(a.timeline !== b.timeline);
        expect(blind.compare(a, b)).toBe('other-history');
      }),
    );
  });

  it('never lets a diverged position cover anything on the new timeline', () => {
    // (2, 0x100) is shared history, and the diverged (1, switchpoint + 1) contains it; serving a
    // read from that diverged state would show the lost write, so it is not "covered".
    expect(
      codec.compare({ timeline: 1, lsn: switchpoint + 1n }, { timeline: 2, lsn: 0x100n }),
    ).toBe('other-history');
  });

  it('merges a lost write to the newer timeline', () => {
    const lost = { timeline: 1, lsn: switchpoint + 10n };
    const current = { timeline: 2, lsn: switchpoint + 5n };
    expect(codec.merge(lost, current)).toEqual(current);
    expect(codec.merge(current, lost)).toEqual(current);
  });

  it('learns switches added to the history after the codec was made', () => {
    const later = new TimelineHistory();
    const learning = createPgCodec(later);
    const old = { timeline: 1, lsn: 10n };
    expect(learning.compare({ timeline: 2, lsn: 20n }, old)).toBe('other-history');
    later.record(2, 1, 15n);
    expect(learning.compare({ timeline: 2, lsn: 20n }, old)).toBe('covered');
  });
});

describe('createPgCodec: laws over random timeline trees', () => {
  it('compare is reflexive and transitive, covered both ways means equal LSN', () => {
    fc.assert(
      fc.property(treeWithPositionsArb, ({ history, a, b, c }) => {
        const codec = createPgCodec(history);
        expect(codec.compare(a, a)).toBe('covered');
        if (codec.compare(a, b) === 'covered' && codec.compare(b, c) === 'covered') {
          // Transitive within one history. Across a switch it is deliberately not: a diverged
          // position (past the switch point) is never said to cover anything on the new timeline,
          // even a position from before the switch whose data it does contain.
          expect(codec.compare(a, c)).toBe(
            codec.compare(c, a) === 'other-history' ? 'other-history' : 'covered',
          );
        }
        if (codec.compare(a, b) === 'covered' && codec.compare(b, a) === 'covered') {
          expect(a.lsn).toBe(b.lsn);
        }
        // other-history is symmetric: it is a property of the pair, not of who asks.
        expect(codec.compare(a, b) === 'other-history').toBe(
          codec.compare(b, a) === 'other-history',
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('merge is the least upper bound within one history', () => {
    fc.assert(
      fc.property(treeWithPositionsArb, ({ history, a, b, c }) => {
        const codec = createPgCodec(history);
        const merged = codec.merge(a, b);
        expect(codec.merge(b, a)).toEqual(merged);
        expect(codec.merge(a, a)).toEqual(a);
        if (codec.compare(a, b) === 'other-history') {
          // No upper bound exists: the newer timeline wins.
          expect(merged.timeline).toBe(Math.max(a.timeline, b.timeline));
          return;
        }
        expect(codec.compare(merged, a)).toBe('covered');
        expect(codec.compare(merged, b)).toBe('covered');
        if (codec.compare(c, a) === 'covered' && codec.compare(c, b) === 'covered') {
          expect(codec.compare(c, merged)).toBe('covered');
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees with a brute-force model of the history', () => {
    fc.assert(
      fc.property(treeWithPositionsArb, ({ history, a, b }) => {
        const codec = createPgCodec(history);
        const expected = modelCompare(history, a, b);
        expect(codec.compare(a, b)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });
});

/**
 * Model: replay each timeline's history as the set of (origin timeline, lsn range) segments it
 * contains, then ask whether `required` and `applied` lie on one line of history.
 */
function modelCompare(
  history: TimelineHistory,
  applied: PgPosition,
  required: PgPosition,
): 'covered' | 'behind' | 'other-history' {
  // The WAL of timeline t as a list of [timeline, upToInclusive] segments, oldest first.
  const segments = (timeline: number): Array<[number, bigint]> => {
    const entry = history.get(timeline);
    if (!entry) return [[timeline, MAX_LSN]];
    const parent = segments(entry.parent).map(
      ([t, upTo]) => [t, minOf(upTo, entry.switchpoint)] as [number, bigint],
    );
    return [...parent, [timeline, MAX_LSN]];
  };
  const contains = (timeline: number, position: PgPosition): boolean =>
    segments(timeline).some(([t, upTo]) => t === position.timeline && position.lsn <= upTo);
  const newer = applied.timeline >= required.timeline ? applied : required;
  const older = newer === applied ? required : applied;
  if (!contains(newer.timeline, older)) return 'other-history';
  return applied.lsn >= required.lsn ? 'covered' : 'behind';
}
