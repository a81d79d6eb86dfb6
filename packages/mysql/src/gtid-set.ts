import {
  countIntervals,
  type GtidInterval,
  intersectIntervals,
  interval,
  intervalsEqual,
  intervalsIntersect,
  isSubsetIntervals,
  MAX_GNO,
  MIN_GNO,
  normalizeIntervals,
  subtractIntervals,
  unionIntervals,
} from './gno-intervals.js';
import { describeInput, invalidPosition } from './invalid.js';
import { trimLayout } from './layout.js';
import { isUuid, normalizeUuid } from './uuid.js';

/**
 * The transactions of one source in a GTID set: a server UUID, an optional tag (MySQL 8.3+), and
 * the transaction numbers as closed intervals in normal form (sorted, neither overlapping nor
 * touching).
 */
export interface GtidSetEntry {
  /** Lowercase, dashed server UUID (`3e11fa47-71ca-11e1-9e33-c80aa9429562`). */
  readonly uuid: string;
  /** Lowercase GTID tag, or `''` for untagged transactions. */
  readonly tag: string;
  /** Never empty. */
  readonly intervals: readonly GtidInterval[];
}

/** Input to {@link GtidSet.fromEntries}: anything valid, in any order, overlapping or not. */
export interface GtidSetEntryInput {
  readonly uuid: string;
  readonly tag?: string | undefined;
  readonly intervals: Iterable<{ readonly start: bigint | number; readonly end: bigint | number }>;
}

export interface GtidSetParseOptions {
  /**
   * Longest text accepted, in characters; longer input is rejected before it is read.
   * Default {@link DEFAULT_GTID_TEXT_LIMIT}.
   */
  readonly maxLength?: number;
}

export interface GtidSetFormatOptions {
  /**
   * Text between two UUIDs. Default `',\n'`, exactly what the server prints in `gtid_executed`
   * and returns from `GTID_SUBTRACT`; `','` gives a one-line form the server accepts as well.
   */
  readonly separator?: ',\n' | ',';
}

/**
 * Default bound on the text {@link GtidSet.parse} reads: 1 MiB. A `gtid_executed` with thousands
 * of UUIDs and gaps fits; anything larger is more likely an attack or a bug than a server's set.
 */
export const DEFAULT_GTID_TEXT_LIMIT = 1 << 20;

/** A GTID tag (MySQL 8.3+): a letter or `_`, then up to 31 letters, digits or `_`. */
const TAG = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;
/** A transaction number or range in the server's text: decimal, no sign, no leading zero. */
const INTERVAL_TEXT = /^([1-9][0-9]{0,18})(?:-([1-9][0-9]{0,18}))?$/;
/**
 * Proof of origin for the constructor: only this module holds it, so outside code cannot build a
 * set that breaks the normal form every operation relies on.
 */
const NORMALISED: unique symbol = Symbol('normalised GTID set entries');

/**
 * An immutable MySQL GTID set: the set of transactions a server has executed (`gtid_executed`),
 * or that a session requires. Always in normal form, so two sets holding the same transactions
 * are {@link GtidSet.equals | equal} and print the same text.
 *
 * Build one with {@link GtidSet.parse} (server text) or {@link GtidSet.fromEntries}; combine with
 * {@link GtidSet.union | union}, {@link GtidSet.intersection | intersection} and
 * {@link GtidSet.subtract | subtract}; test with {@link GtidSet.isSubsetOf | isSubsetOf} and
 * {@link GtidSet.intersects | intersects}. Each operation is one linear pass over both sets.
 */
export class GtidSet {
  /** The set with no transactions (the server prints it as `''`). */
  static readonly EMPTY: GtidSet = new GtidSet([], NORMALISED);

  /** Sorted by UUID, then tag (untagged first), with at most one entry per UUID and tag. */
  readonly entries: readonly GtidSetEntry[];

  /** Internal: use {@link GtidSet.parse} or {@link GtidSet.fromEntries}. */
  constructor(entries: readonly GtidSetEntry[], origin: typeof NORMALISED) {
    if (origin !== NORMALISED) {
      throw new TypeError('Build a GtidSet with GtidSet.parse or GtidSet.fromEntries.');
    }
    this.entries = Object.freeze(entries);
  }

  /**
   * Parse the server's text form: `uuid:1-5:7-9,uuid2:1-3`, with tagged transactions of MySQL
   * 8.3+ as `uuid:tag:1-5` or `uuid:1-3:tag:5-7`. UUIDs and tags may be in any case (they are
   * normalised to lowercase), elements may be separated by whitespace and newlines as the server
   * prints them (`,\n`), and an empty or all-whitespace text is the empty set. Elements may
   * repeat a UUID and intervals may overlap or come in any order; the result is normalised.
   *
   * Strict everywhere else: no whitespace inside an element, no empty elements, decimal numbers
   * without sign or leading zeros in 1 .. 2^63-2, ranges with start <= end, and every UUID and
   * tag followed by at least one number. (The server itself is more lenient; it accepts and
   * silently drops some of these.)
   *
   * @throws TokenError `TIDEMARK_POSITION_INVALID` on anything else, or text over `maxLength`.
   */
  static parse(text: string, options: GtidSetParseOptions = {}): GtidSet {
    if (typeof text !== 'string') {
      throw invalidPosition(`A GTID set must be a string, got ${describeInput(text)}.`);
    }
    const maxLength = options.maxLength ?? DEFAULT_GTID_TEXT_LIMIT;
    if (text.length > maxLength) {
      throw invalidPosition(
        `GTID set text is ${text.length} characters, over the limit of ${maxLength}; raise maxLength if a server really has a set this large.`,
      );
    }
    const body = trimLayout(text);
    if (body === '') return GtidSet.EMPTY;
    const collected: Collected = new Map();
    for (const element of body.split(',')) parseElement(trimLayout(element), collected);
    return fromCollected(collected);
  }

  /**
   * Build a set from entries in any order, with overlapping or touching intervals and repeated
   * UUIDs; the result is normalised. Numbers may be bigints or safe integers.
   *
   * @throws TokenError `TIDEMARK_POSITION_INVALID` on an invalid UUID, tag, or interval.
   */
  static fromEntries(entries: Iterable<GtidSetEntryInput>): GtidSet {
    const collected: Collected = new Map();
    for (const entry of entries) {
      const uuid = normalizeUuid(entry.uuid);
      const tag = normalizeTag(entry.tag ?? '');
      const target = collect(collected, uuid, tag);
      for (const range of entry.intervals) {
        target.push(checkedInterval(toGno(range.start), toGno(range.end)));
      }
    }
    return fromCollected(collected);
  }

  /** True when the set holds no transaction. */
  get isEmpty(): boolean {
    return this.entries.length === 0;
  }

  /** The distinct server UUIDs in the set, sorted. */
  uuids(): string[] {
    const out: string[] = [];
    for (const entry of this.entries) if (out[out.length - 1] !== entry.uuid) out.push(entry.uuid);
    return out;
  }

  /** Transactions in this set or in `other`. */
  union(other: GtidSet): GtidSet {
    if (other.isEmpty) return this;
    if (this.isEmpty) return other;
    return createGtidSet(
      mergeEntries(this.entries, other.entries, {
        both: unionIntervals,
        leftOnly: true,
        rightOnly: true,
      }),
    );
  }

  /** Transactions in both this set and `other`. */
  intersection(other: GtidSet): GtidSet {
    return createGtidSet(
      mergeEntries(this.entries, other.entries, {
        both: intersectIntervals,
        leftOnly: false,
        rightOnly: false,
      }),
    );
  }

  /** Transactions in this set but not in `other` (the server's `GTID_SUBTRACT(this, other)`). */
  subtract(other: GtidSet): GtidSet {
    if (other.isEmpty || this.isEmpty) return this;
    return createGtidSet(
      mergeEntries(this.entries, other.entries, {
        both: subtractIntervals,
        leftOnly: true,
        rightOnly: false,
      }),
    );
  }

  /** True when every transaction of this set is in `other` (the server's `GTID_SUBSET`). */
  isSubsetOf(other: GtidSet): boolean {
    let j = 0;
    for (const entry of this.entries) {
      while (j < other.entries.length && compareKeys(other.entries[j] as GtidSetEntry, entry) < 0) {
        j++;
      }
      const match = other.entries[j];
      if (match === undefined || compareKeys(match, entry) !== 0) return false;
      if (!isSubsetIntervals(entry.intervals, match.intervals)) return false;
    }
    return true;
  }

  /** True when this set and `other` share at least one transaction. */
  intersects(other: GtidSet): boolean {
    let i = 0;
    let j = 0;
    while (i < this.entries.length && j < other.entries.length) {
      const left = this.entries[i] as GtidSetEntry;
      const right = other.entries[j] as GtidSetEntry;
      const order = compareKeys(left, right);
      if (order < 0) i++;
      else if (order > 0) j++;
      else {
        if (intervalsIntersect(left.intervals, right.intervals)) return true;
        i++;
        j++;
      }
    }
    return false;
  }

  /** True when both sets hold exactly the same transactions. */
  equals(other: GtidSet): boolean {
    if (this === other) return true;
    if (this.entries.length !== other.entries.length) return false;
    for (let i = 0; i < this.entries.length; i++) {
      const left = this.entries[i] as GtidSetEntry;
      const right = other.entries[i] as GtidSetEntry;
      if (compareKeys(left, right) !== 0 || !intervalsEqual(left.intervals, right.intervals)) {
        return false;
      }
    }
    return true;
  }

  /** Number of transactions in the set. A bigint: the count can exceed 2^53. */
  count(): bigint {
    let total = 0n;
    for (const entry of this.entries) total += countIntervals(entry.intervals);
    return total;
  }

  /**
   * The server's canonical text: UUIDs in byte order, each followed by its untagged intervals and
   * then its tags in order, single transactions as `n`, ranges as `n-m`, UUIDs separated by `,\n`
   * (see {@link GtidSetFormatOptions.separator}); the empty set is `''`. This is the text
   * `GTID_SUBTRACT(set, '')` returns, and what `WAIT_FOR_EXECUTED_GTID_SET` and `GTID_SUBSET`
   * accept. It contains only `0-9 a-f a-z _ : - ,` and newline, never a quote.
   */
  format(options: GtidSetFormatOptions = {}): string {
    const separator = options.separator ?? ',\n';
    let out = '';
    let previousUuid: string | undefined;
    for (const entry of this.entries) {
      if (entry.uuid !== previousUuid) {
        if (previousUuid !== undefined) out += separator;
        out += entry.uuid;
        previousUuid = entry.uuid;
      }
      if (entry.tag !== '') out += `:${entry.tag}`;
      for (const range of entry.intervals) {
        out += range.start === range.end ? `:${range.start}` : `:${range.start}-${range.end}`;
      }
    }
    return out;
  }

  /** {@link GtidSet.format} with the default options. */
  toString(): string {
    return this.format();
  }

  /** Serialises as the one-line server text (bigints have no JSON form). */
  toJSON(): string {
    return this.format({ separator: ',' });
  }
}

/** The lowercase form of a GTID tag; `''` stays `''` (untagged). */
export function normalizeTag(tag: string): string {
  if (tag === '') return '';
  if (typeof tag !== 'string' || !TAG.test(tag)) {
    throw invalidPosition(
      `${describeInput(tag)} is not a GTID tag; a tag is a letter or _ followed by up to 31 letters, digits or _.`,
    );
  }
  return tag.toLowerCase();
}

/** True when `text` is a valid non-empty GTID tag (either case). */
export function isGtidTag(text: string): boolean {
  return typeof text === 'string' && TAG.test(text);
}

type Collected = Map<string, { uuid: string; tag: string; intervals: GtidInterval[] }>;

/** One comma-separated element: `uuid(:item)+` where an item is a tag or an interval. */
function parseElement(element: string, collected: Collected): void {
  const items = element.split(':');
  const uuidText = items[0] as string;
  if (!isUuid(uuidText)) {
    throw invalidPosition(
      element === ''
        ? 'GTID set has an empty element (two commas in a row, or a trailing comma).'
        : `GTID set element ${describeInput(element)} does not start with a server UUID (8-4-4-4-12 hexadecimal digits).`,
    );
  }
  const uuid = uuidText.toLowerCase();
  let target: GtidInterval[] | undefined;
  let targetHasNumbers = false;
  let tag = '';
  for (let i = 1; i < items.length; i++) {
    const item = items[i] as string;
    const range = INTERVAL_TEXT.exec(item);
    if (range) {
      target ??= collect(collected, uuid, tag);
      const start = BigInt(range[1] as string);
      const end = range[2] === undefined ? start : BigInt(range[2]);
      target.push(checkedInterval(start, end));
      targetHasNumbers = true;
      continue;
    }
    if (!TAG.test(item)) {
      throw invalidPosition(
        `GTID set element for ${uuid} has ${describeInput(item)} where a transaction number (1 .. 2^63-2, no leading zeros), a range n-m, or a tag was expected.`,
      );
    }
    if (i > 1 && !targetHasNumbers) throw missingNumbers(uuid, tag);
    tag = item.toLowerCase();
    target = undefined;
    targetHasNumbers = false;
  }
  if (!targetHasNumbers) throw missingNumbers(uuid, tag);
}

function missingNumbers(uuid: string, tag: string): Error {
  const what = tag === '' ? `UUID ${uuid}` : `tag "${tag}" of ${uuid}`;
  return invalidPosition(
    `GTID set names ${what} without any transaction number; write it as ${tag === '' ? uuid : `${uuid}:${tag}`}:1-5.`,
  );
}

function collect(collected: Collected, uuid: string, tag: string): GtidInterval[] {
  const key = `${uuid}:${tag}`;
  let entry = collected.get(key);
  if (!entry) {
    entry = { uuid, tag, intervals: [] };
    collected.set(key, entry);
  }
  return entry.intervals;
}

function fromCollected(collected: Collected): GtidSet {
  const entries: GtidSetEntry[] = [];
  for (const { uuid, tag, intervals } of collected.values()) {
    if (intervals.length === 0) continue;
    entries.push(entry(uuid, tag, normalizeIntervals(intervals)));
  }
  entries.sort(compareKeys);
  return createGtidSet(entries);
}

function checkedInterval(start: bigint, end: bigint): GtidInterval {
  if (start < MIN_GNO || end > MAX_GNO || start > end) {
    const what =
      start === end ? `Transaction number ${start}` : `Transaction range ${start}-${end}`;
    throw invalidPosition(
      `${what} is not valid; MySQL transaction numbers run from 1 to 2^63-2 (9223372036854775806) and a range must not end before it starts.`,
    );
  }
  return interval(start, end);
}

function toGno(value: bigint | number): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  throw invalidPosition(
    `Transaction number ${describeInput(String(value))} is not an integer; pass a bigint or a safe integer.`,
  );
}

function entry(uuid: string, tag: string, intervals: readonly GtidInterval[]): GtidSetEntry {
  return Object.freeze({ uuid, tag, intervals: Object.freeze(intervals) });
}

/**
 * Order of entries: UUID, then tag with untagged first. Canonical UUIDs have the same length and
 * dash positions, so string order is byte order, as in the server; tags are lowercase ASCII.
 */
function compareKeys(a: GtidSetEntry, b: GtidSetEntry): number {
  if (a.uuid !== b.uuid) return a.uuid < b.uuid ? -1 : 1;
  if (a.tag !== b.tag) return a.tag < b.tag ? -1 : 1;
  return 0;
}

/** One merge pass over two sorted entry lists; entries whose intervals end up empty vanish. */
function mergeEntries(
  left: readonly GtidSetEntry[],
  right: readonly GtidSetEntry[],
  rule: {
    both: (a: readonly GtidInterval[], b: readonly GtidInterval[]) => GtidInterval[];
    leftOnly: boolean;
    rightOnly: boolean;
  },
): GtidSetEntry[] {
  const out: GtidSetEntry[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    const a = left[i];
    const b = right[j];
    const order = a === undefined ? 1 : b === undefined ? -1 : compareKeys(a, b);
    if (order < 0) {
      if (rule.leftOnly) out.push(a as GtidSetEntry);
      i++;
    } else if (order > 0) {
      if (rule.rightOnly) out.push(b as GtidSetEntry);
      j++;
    } else {
      const intervals = rule.both((a as GtidSetEntry).intervals, (b as GtidSetEntry).intervals);
      if (intervals.length > 0)
        out.push(entry((a as GtidSetEntry).uuid, (a as GtidSetEntry).tag, intervals));
      i++;
      j++;
    }
  }
  return out;
}

/** Wrap entries that are already normalised and sorted. */
function createGtidSet(entries: GtidSetEntry[]): GtidSet {
  return entries.length === 0 ? GtidSet.EMPTY : new GtidSet(entries, NORMALISED);
}
