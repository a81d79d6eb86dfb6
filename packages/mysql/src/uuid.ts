import { describeInput, invalidPosition } from './invalid.js';

/** A server UUID as MySQL prints it: 8-4-4-4-12 hexadecimal digits (any case on input). */
const UUID_TEXT = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const BASE64URL_VALUE: ReadonlyMap<string, number> = new Map(
  [...BASE64URL].map((char, value) => [char, value]),
);
/** 16 bytes = 128 bits = 21 full 6-bit characters and one carrying the last 2 bits. */
export const UUID_BASE64URL_LENGTH = 22;

/** True when `text` is a server UUID in MySQL's dashed form (either case). */
export function isUuid(text: string): boolean {
  return typeof text === 'string' && UUID_TEXT.test(text);
}

/**
 * The canonical (lowercase, dashed) form of a server UUID. Lowercase hexadecimal sorts in byte
 * order, the order MySQL prints GTID sets in.
 *
 * @throws TokenError `TIDEMARK_POSITION_INVALID` unless `text` is a dashed 36-character UUID.
 */
export function normalizeUuid(text: string): string {
  if (!isUuid(text)) {
    throw invalidPosition(
      `${describeInput(text)} is not a MySQL server UUID; expected 8-4-4-4-12 hexadecimal digits such as 3e11fa47-71ca-11e1-9e33-c80aa9429562.`,
    );
  }
  return text.toLowerCase();
}

/** The 16 bytes of a canonical UUID as 22 unpadded base64url characters. */
export function uuidToBase64Url(uuid: string): string {
  const hex = uuid.replaceAll('-', '');
  let out = '';
  let bits = 0;
  let carried = 0;
  for (let i = 0; i < 32; i += 2) {
    carried = (carried << 8) | Number.parseInt(hex.slice(i, i + 2), 16);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += BASE64URL[(carried >> bits) & 63];
    }
    carried &= (1 << bits) - 1;
  }
  // 128 = 21 * 6 + 2: the last 2 bits go in the high end of one more character.
  return out + BASE64URL[(carried << (6 - bits)) & 63];
}

/**
 * Inverse of {@link uuidToBase64Url}: the canonical UUID, or undefined when `text` is not exactly
 * what `uuidToBase64Url` produces (wrong length, a character outside the alphabet, or non-zero
 * padding bits in the last character, which would give a second spelling of the same UUID).
 */
export function uuidFromBase64Url(text: string): string | undefined {
  if (text.length !== UUID_BASE64URL_LENGTH) return undefined;
  let hex = '';
  let bits = 0;
  let carried = 0;
  for (let i = 0; i < UUID_BASE64URL_LENGTH; i++) {
    const value = BASE64URL_VALUE.get(text[i] as string);
    if (value === undefined) return undefined;
    carried = (carried << 6) | value;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      hex += ((carried >> bits) & 255).toString(16).padStart(2, '0');
      carried &= (1 << bits) - 1;
    }
  }
  if (carried !== 0) return undefined;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
