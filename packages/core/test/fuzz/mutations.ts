/**
 * Mutations of a valid token, as data so fast-check can shrink them: what a tampering user, a
 * truncating proxy or a buggy cookie jar does to token text.
 */
import fc from 'fast-check';

export type Mutation =
  /** Flip one bit of one UTF-16 code unit. */
  | { readonly kind: 'flip'; readonly at: number; readonly bit: number }
  | { readonly kind: 'truncate'; readonly at: number }
  /** Repeat a slice in place (`times` extra copies). */
  | {
      readonly kind: 'duplicate';
      readonly at: number;
      readonly length: number;
      readonly times: number;
    }
  /** Head of this token + tail of another valid token. */
  | { readonly kind: 'splice'; readonly at: number; readonly donorAt: number }
  | { readonly kind: 'insert'; readonly at: number; readonly text: string }
  | { readonly kind: 'delete'; readonly at: number; readonly length: number }
  /** Swap two slices (fields moved around). */
  | { readonly kind: 'swap'; readonly a: number; readonly b: number; readonly length: number };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.nat(15) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('duplicate' as const),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 40 }),
    times: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({ kind: fc.constant('splice' as const), at: fc.nat(), donorAt: fc.nat() }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    text: fc.oneof(
      fc.constantFrom('~', '~~', '.', '-', '_', '0', 'a', 'Z', '%7E', '\u0000', '\uD800', 'é'),
      fc.string({ maxLength: 6 }),
    ),
  }),
  fc.record({
    kind: fc.constant('delete' as const),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 10 }),
  }),
  fc.record({
    kind: fc.constant('swap' as const),
    a: fc.nat(),
    b: fc.nat(),
    length: fc.integer({ min: 1, max: 12 }),
  }),
);

/** Apply `change` to `token`; indexes wrap around the text so every mutation lands somewhere. */
export function applyMutation(token: string, donor: string, change: Mutation): string {
  const n = token.length;
  const at = 'at' in change ? change.at % (n + 1) : 0;
  switch (change.kind) {
    case 'flip': {
      const i = change.at % n;
      const flipped = String.fromCharCode(token.charCodeAt(i) ^ (1 << change.bit));
      return token.slice(0, i) + flipped + token.slice(i + 1);
    }
    case 'truncate':
      return token.slice(0, at);
    case 'duplicate': {
      const slice = token.slice(at, at + change.length);
      return token.slice(0, at) + slice.repeat(change.times + 1) + token.slice(at + slice.length);
    }
    case 'splice':
      return token.slice(0, at) + donor.slice(change.donorAt % (donor.length + 1));
    case 'insert':
      return token.slice(0, at) + change.text + token.slice(at);
    case 'delete':
      return token.slice(0, at) + token.slice(at + change.length);
    case 'swap': {
      const a = change.a % n;
      const b = change.b % n;
      const [first, second] = a <= b ? [a, b] : [b, a];
      const length = Math.min(change.length, second - first);
      if (length <= 0) return token;
      const x = token.slice(first, first + length);
      const y = token.slice(second, second + length);
      return (
        token.slice(0, first) +
        y +
        token.slice(first + length, second) +
        x +
        token.slice(second + y.length)
      );
    }
  }
}
