/**
 * fast-check generators for GTID sets and MariaDB positions, plus a brute-force model of a GTID
 * set (a plain Set of `uuid:tag:gno` strings) to check the interval algebra against.
 */
import fc from 'fast-check';
import { GtidSet, MAX_GNO, MariadbGtidPosition } from '../../src/index.js';

/** Three UUIDs whose order differs from their generation order, to exercise sorting. */
export const UUIDS = [
  'f0e1d2c3-b4a5-4697-8899-aabbccddeeff',
  '00000000-0000-0000-0000-000000000001',
  '3e11fa47-71ca-11e1-9e33-c80aa9429562',
] as const;
/** `''` is untagged; the others sort `_x` < `a` < `b_1` (byte order, `_` first). */
export const TAGS = ['', 'a', 'b_1', '_x'] as const;

export interface RawRange {
  readonly uuid: number;
  readonly tag: number;
  readonly start: bigint;
  readonly end: bigint;
}

/** Ranges inside 1..`universe`, small enough to enumerate. */
export function smallRanges(universe = 24): fc.Arbitrary<RawRange[]> {
  return fc.array(
    fc
      .record({
        uuid: fc.nat(UUIDS.length - 1),
        tag: fc.nat(TAGS.length - 1),
        start: fc.integer({ min: 1, max: universe }),
        length: fc.integer({ min: 0, max: 6 }),
      })
      .map(({ uuid, tag, start, length }) => ({
        uuid,
        tag,
        start: BigInt(start),
        end: BigInt(Math.min(universe, start + length)),
      })),
    { maxLength: 8 },
  );
}

/** Ranges anywhere in 1..2^63-2, with a bias toward both ends and toward sharing endpoints. */
export function wideRanges(): fc.Arbitrary<RawRange[]> {
  const anchor = fc.oneof(
    fc.bigInt({ min: 1n, max: 40n }),
    fc.bigInt({ min: MAX_GNO - 40n, max: MAX_GNO }),
    fc.bigInt({ min: 1n, max: MAX_GNO }),
    fc.constantFrom(1n, 2n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, MAX_GNO - 1n, MAX_GNO),
  );
  return fc.array(
    fc
      .record({
        uuid: fc.nat(UUIDS.length - 1),
        tag: fc.nat(TAGS.length - 1),
        a: anchor,
        b: fc.oneof(anchor, fc.bigInt({ min: 0n, max: 5n })),
      })
      .map(({ uuid, tag, a, b }) => {
        // `b` is either another anchor or a short length from `a`.
        const other = b <= 5n ? a + b : b;
        const start = a < other ? a : other;
        const end = a < other ? other : a;
        return { uuid, tag, start, end: end > MAX_GNO ? MAX_GNO : end };
      }),
    { maxLength: 8 },
  );
}

export function toSet(ranges: readonly RawRange[]): GtidSet {
  return GtidSet.fromEntries(
    ranges.map((r) => ({
      uuid: UUIDS[r.uuid] as string,
      tag: TAGS[r.tag] as string,
      intervals: [{ start: r.start, end: r.end }],
    })),
  );
}

export const smallSet: fc.Arbitrary<GtidSet> = smallRanges().map(toSet);
export const wideSet: fc.Arbitrary<GtidSet> = wideRanges().map(toSet);
export const anySet: fc.Arbitrary<GtidSet> = fc.oneof(smallSet, wideSet);

/** The brute-force model: every transaction as one string. Only for small ranges. */
export function model(ranges: readonly RawRange[]): Set<string> {
  const out = new Set<string>();
  for (const r of ranges) {
    for (let n = r.start; n <= r.end; n++) out.add(`${UUIDS[r.uuid]}:${TAGS[r.tag]}:${n}`);
  }
  return out;
}

/** Expand a set into the model's form (again only sensible for small sets). */
export function expand(set: GtidSet): Set<string> {
  const out = new Set<string>();
  for (const entry of set.entries) {
    for (const range of entry.intervals) {
      for (let n = range.start; n <= range.end; n++) out.add(`${entry.uuid}:${entry.tag}:${n}`);
    }
  }
  return out;
}

/**
 * Server-like but non-canonical text for the same set: elements split per range and shuffled,
 * random case, whitespace and newlines between elements, single numbers sometimes as `n-n`.
 */
export function messyText(ranges: readonly RawRange[]): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.shuffledSubarray([...ranges.keys()], {
        minLength: ranges.length,
        maxLength: ranges.length,
      }),
      fc.array(fc.constantFrom('', ' ', '\n', ' \n', '\r\n', '\t'), {
        minLength: ranges.length + 1,
        maxLength: ranges.length + 1,
      }),
      fc.array(fc.boolean(), { minLength: ranges.length, maxLength: ranges.length }),
    )
    .map(([order, spaces, upper]) => {
      const elements = order.map((index, k) => {
        const r = ranges[index] as RawRange;
        const uuid = UUIDS[r.uuid] as string;
        const tag = TAGS[r.tag] as string;
        const caseOf = (text: string) => (upper[k] ? text.toUpperCase() : text);
        const range = r.start === r.end && !upper[k] ? `${r.start}` : `${r.start}-${r.end}`;
        return `${caseOf(uuid)}${tag === '' ? '' : `:${caseOf(tag)}`}:${range}`;
      });
      let text = spaces[0] as string;
      elements.forEach((element, k) => {
        text += (k === 0 ? '' : `,${spaces[k]}`) + element;
      });
      return text + (spaces[ranges.length] as string);
    });
}

/** MariaDB positions over a few domains, with equal-seq/different-server conflicts possible. */
export const mariadbPosition: fc.Arbitrary<MariadbGtidPosition> = fc
  .uniqueArray(
    fc.record({
      domain: fc.oneof(fc.nat(3), fc.constant(0xffff_ffff)),
      server: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constant(0xffff_ffff)),
      seq: fc.oneof(
        fc.bigInt({ min: 0n, max: 12n }),
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        fc.constant((1n << 64n) - 1n),
      ),
    }),
    { selector: (g) => g.domain, maxLength: 5 },
  )
  .map((gtids) => MariadbGtidPosition.fromGtids(gtids));
