import { TokenError } from '@tidemark/core';
import { POSITION_TEXT_PATTERN } from '@tidemark/core/adapter';
import { describe, expect, it } from 'vitest';
import { mongoPositionCodec as codec, compareTimes, type MongoPosition } from '../src/index.js';

/** Deterministic generator so a failing case can be reproduced from the seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 0x1_0000_0000;
  };
}

function arbitraryPosition(next: () => number): MongoPosition {
  const int = (max: number) => Math.floor(next() * (max + 1));
  const time = { t: int(0xffff_ffff), i: int(next() < 0.5 ? 5 : 0xffff_ffff) };
  const term = int(next() < 0.5 ? 3 : 2 ** 40);
  if (next() < 0.3) return { time, term };
  const hash = Buffer.from(Array.from({ length: 20 }, () => int(255))).toString('base64url');
  const keyId = (BigInt(int(0x7fff_ffff)) * BigInt(int(0xffff_ffff))).toString();
  return { time, term, clusterTime: { time: { t: int(0xffff_ffff), i: int(9) }, keyId, hash } };
}

describe('mongoPositionCodec', () => {
  const next = random(20261202);
  const samples = Array.from({ length: 2000 }, () => arbitraryPosition(next));

  it('round-trips every position and uses only URL- and cookie-safe characters', () => {
    for (const position of samples) {
      const text = codec.encode(position);
      expect(text).toMatch(POSITION_TEXT_PATTERN);
      expect(codec.decode(text)).toEqual(position);
    }
  });

  it('encodes compactly: at most 64 characters with a signed cluster time', () => {
    const text = codec.encode({
      time: { t: 1_796_220_931, i: 2 },
      term: 1,
      clusterTime: {
        time: { t: 1_796_220_931, i: 2 },
        keyId: '7389000000000000001',
        hash: Buffer.alloc(20).toString('base64url'),
      },
    });
    expect(text.length).toBeLessThanOrEqual(64);
    expect(codec.encode({ time: { t: 1_796_220_931, i: 2 }, term: 1 })).toBe('tpf8xv.2.1');
  });

  it('merge is the least upper bound within one history: commutative, idempotent, covers both', () => {
    let acrossTerms = 0;
    for (let n = 0; n + 1 < samples.length; n += 2) {
      const a = samples[n]!;
      const b = samples[n + 1]!;
      const ab = codec.merge(a, b);
      expect(codec.encode(ab)).toBe(codec.encode(codec.merge(b, a)));
      expect(codec.encode(codec.merge(a, a))).toBe(codec.encode(a));
      expect(compareTimes(ab.time, a.time) === 0 || compareTimes(ab.time, b.time) === 0).toBe(true);
      const [earlier, later] = a.term <= b.term ? [a, b] : [b, a];
      if (
        earlier.term !== 0 &&
        earlier.term !== later.term &&
        compareTimes(earlier.time, later.time) > 0
      ) {
        // The earlier term's position is timed past the later term's: it was rolled back, and
        // the merge is the later term's position (the history the set follows now).
        acrossTerms++;
        expect(ab.time).toEqual(later.time);
        expect(ab.term).toBe(later.term);
        expect(codec.compare(ab, earlier)).toBe('behind');
        continue;
      }
      expect(codec.compare(ab, a)).toBe('covered');
      expect(codec.compare(ab, b)).toBe('covered');
    }
    expect(acrossTerms).toBeGreaterThan(0);
  });

  it('merge keeps the later term across an election, even when a rolled-back write is later in time', () => {
    const rolledBack: MongoPosition = { time: { t: 100, i: 7 }, term: 1 };
    const newPrimary: MongoPosition = { time: { t: 100, i: 3 }, term: 2 };
    expect(codec.merge(rolledBack, newPrimary)).toEqual(newPrimary);
    expect(codec.merge(newPrimary, rolledBack)).toEqual(newPrimary);
    // A term-1 write before the election is covered by the new term's later position.
    const kept: MongoPosition = { time: { t: 99, i: 1 }, term: 1 };
    expect(codec.merge(kept, newPrimary)).toEqual(newPrimary);
    // A position without a term (a replica's observation) still merges by time.
    const untermed: MongoPosition = { time: { t: 101, i: 0 }, term: 0 };
    expect(codec.merge(untermed, newPrimary)).toEqual(untermed);
  });

  it('compares by operation time: equal covers, one increment less is behind', () => {
    const required: MongoPosition = { time: { t: 100, i: 5 }, term: 1 };
    expect(codec.compare({ time: { t: 100, i: 5 }, term: 1 }, required)).toBe('covered');
    expect(codec.compare({ time: { t: 100, i: 4 }, term: 1 }, required)).toBe('behind');
    expect(codec.compare({ time: { t: 99, i: 9 }, term: 1 }, required)).toBe('behind');
    expect(codec.compare({ time: { t: 101, i: 0 }, term: 1 }, required)).toBe('covered');
  });

  it.each([
    '',
    '1.2',
    '1.2.3.4',
    '01.2.3',
    'A.2.3',
    '1.2.3.4.5.6.short',
    `1.2.3.4.5.6.${'A'.repeat(26)}`,
    `1.2.3.4.5.zzzzzzzzzzzzz.${'A'.repeat(27)}`,
    '1z141z4.0.0', // t = 2^32, one past the largest BSON Timestamp seconds
    `${'1'.repeat(200)}`,
    '1.2.3~x',
  ])('rejects %j with TIDEMARK_POSITION_INVALID', (text) => {
    let thrown: unknown;
    try {
      codec.decode(text);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TokenError);
    expect((thrown as TokenError).code).toBe('TIDEMARK_POSITION_INVALID');
  });
});
