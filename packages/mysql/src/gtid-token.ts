import { type GtidInterval, MAX_GNO } from './gno-intervals.js';
import { GtidSet, type GtidSetEntryInput, isGtidTag } from './gtid-set.js';
import { describeInput, invalidPosition } from './invalid.js';
import { UUID_BASE64URL_LENGTH, uuidFromBase64Url, uuidToBase64Url } from './uuid.js';

/**
 * Compact, URL- and cookie-safe text for a GTID set, used inside Tidemark tokens.
 *
 * ```text
 * token     = "0"                              the empty set
 *           | group *( "." group )             one group per (UUID, tag), in the set's order
 * group     = uuid22 [ "-" tag "-" ] intervals
 * uuid22    = the UUID's 16 bytes as 22 unpadded base64url characters (A-Z a-z 0-9 - _)
 * tag       = the lowercase tag, [a-z_][a-z0-9_]{0,31}
 * intervals = interval *( "_" interval )       ascending, never touching
 * interval  = n36 [ "-" n36 ]                  a single number, or start-end with start < end
 * n36       = the number in lowercase base 36, no leading zeros
 * ```
 *
 * Example: `3e11fa47-71ca-11e1-9e33-c80aa9429562:1-12345` is `PhH6R3HKEeGeM8gKqUKVYg1-9ix`.
 *
 * Why it parses without ambiguity: a group is cut at `.`, which no part of it contains; the UUID
 * has a fixed width; an interval never starts with `-`, so a `-` right after the UUID opens a tag,
 * which runs to the next `-` (tags contain no `-`).
 *
 * Every set has exactly one encoding, and decoding accepts nothing else: the decoder re-encodes
 * what it read and compares. A token that decodes therefore names exactly one set, and tokens can
 * be compared as text.
 */

/** Longest token text {@link decodeGtidSetToken} reads: far above any cookie, still cheap. */
export const MAX_GTID_TOKEN_LENGTH = 16_384;

const EMPTY_TOKEN = '0';
const GROUP_SEPARATOR = '.';
const INTERVAL_SEPARATOR = '_';
const RANGE_SEPARATOR = '-';
const TAG_MARK = '-';
const TOKEN_TEXT = /^[A-Za-z0-9_.-]+$/;
const BASE36_NUMBER = /^[0-9a-z]{1,13}$/;

/** Encode a GTID set as compact token text (see the format above). */
export function encodeGtidSetToken(set: GtidSet): string {
  if (set.isEmpty) return EMPTY_TOKEN;
  const groups: string[] = [];
  for (const entry of set.entries) {
    let group = uuidToBase64Url(entry.uuid);
    if (entry.tag !== '') group += `${TAG_MARK}${entry.tag}${TAG_MARK}`;
    group += entry.intervals.map(encodeInterval).join(INTERVAL_SEPARATOR);
    groups.push(group);
  }
  return groups.join(GROUP_SEPARATOR);
}

/**
 * Strictly decode token text made by {@link encodeGtidSetToken}.
 *
 * @throws TokenError `TIDEMARK_POSITION_INVALID` on any text `encodeGtidSetToken` could not have
 *   produced, including other spellings of a valid set (unsorted, overlapping, leading zeros).
 */
export function decodeGtidSetToken(text: string): GtidSet {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_GTID_TOKEN_LENGTH) {
    throw invalidPosition(
      typeof text === 'string' && text.length > MAX_GTID_TOKEN_LENGTH
        ? `MySQL position is ${text.length} characters, over the limit of ${MAX_GTID_TOKEN_LENGTH}.`
        : `MySQL position must be a non-empty string, got ${describeInput(text)}.`,
    );
  }
  if (!TOKEN_TEXT.test(text)) throw notAToken();
  if (text === EMPTY_TOKEN) return GtidSet.EMPTY;
  const entries: GtidSetEntryInput[] = text.split(GROUP_SEPARATOR).map(decodeGroup);
  const set = GtidSet.fromEntries(entries);
  // The one-spelling rule: fromEntries normalises, so any other spelling re-encodes differently.
  if (encodeGtidSetToken(set) !== text) throw notAToken();
  return set;
}

function encodeInterval(range: GtidInterval): string {
  const start = range.start.toString(36);
  return range.start === range.end ? start : `${start}${RANGE_SEPARATOR}${range.end.toString(36)}`;
}

function decodeGroup(group: string): GtidSetEntryInput {
  const uuid = uuidFromBase64Url(group.slice(0, UUID_BASE64URL_LENGTH));
  if (uuid === undefined) throw notAToken();
  let rest = group.slice(UUID_BASE64URL_LENGTH);
  let tag = '';
  if (rest.startsWith(TAG_MARK)) {
    const close = rest.indexOf(TAG_MARK, 1);
    tag = rest.slice(1, close);
    if (close === -1 || !isGtidTag(tag)) throw notAToken();
    rest = rest.slice(close + 1);
  }
  if (rest === '') throw notAToken();
  const intervals = rest.split(INTERVAL_SEPARATOR).map((piece) => {
    const bounds = piece.split(RANGE_SEPARATOR);
    if (bounds.length > 2) throw notAToken();
    const start = decodeNumber(bounds[0] as string);
    const end = bounds.length === 2 ? decodeNumber(bounds[1] as string) : start;
    return { start, end };
  });
  return { uuid, tag, intervals };
}

function decodeNumber(text: string): bigint {
  if (!BASE36_NUMBER.test(text)) throw notAToken();
  let value = 0n;
  for (const char of text) value = value * 36n + BigInt(Number.parseInt(char, 36));
  // Range errors are reported here rather than by GtidSet, whose message speaks of server text.
  if (value < 1n || value > MAX_GNO) throw notAToken();
  return value;
}

function notAToken(): Error {
  return invalidPosition(
    'Position is not a MySQL GTID set in Tidemark token form; the token was altered, truncated, or comes from another adapter.',
  );
}
