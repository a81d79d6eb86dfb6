import { describe, expect, it } from 'vitest';
import {
  assertClusterName,
  ConfigError,
  ErrorCode,
  type SigningKey,
  TOKEN_PREFIX,
  TokenCodec,
  type TokenCodecOptions,
  TokenError,
} from '../../src/index.js';

const NOW_MS = 1_750_000_000_000;
const NOW_S = NOW_MS / 1000;
const KEY_A: SigningKey = { id: 'a', secret: 'a'.repeat(32) };
const KEY_B: SigningKey = { id: 'key-b_2', secret: new Uint8Array(48).fill(7) };

function codec(options: TokenCodecOptions = {}): TokenCodec {
  return new TokenCodec({ now: () => NOW_MS, ...options });
}

/** The error `fn` throws (fails the test if it throws nothing). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

function expectTokenError(fn: () => unknown, code: string): TokenError {
  const error = thrown(fn);
  expect(error).toBeInstanceOf(TokenError);
  expect((error as TokenError).code).toBe(code);
  expect((error as TokenError).retryable).toBe(false);
  return error as TokenError;
}

function expectConfigError(fn: () => unknown, message?: string): void {
  const error = thrown(fn);
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).code).toBe('TIDEMARK_CONFIG');
  if (message) expect((error as ConfigError).message).toContain(message);
}

/** Replace the character at `index` with another allowed one. */
function alterAt(text: string, index: number): string {
  const replacement = text[index] === 'x' ? 'y' : 'x';
  return text.slice(0, index) + replacement + text.slice(index + 1);
}

describe('round trip', () => {
  it('decodes what it encoded, for one or several clusters, with issuedAt', () => {
    const c = codec();
    for (const positions of [
      {},
      { default: '1.10' },
      { pg: '0-16B3748.2', mysql: 'uuid-1-5_7', mongo: '7313-1' },
      Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`c${i}`, `${i}.${i * 7}`])),
    ]) {
      const token = c.encode({ positions });
      const decoded = c.decode(token);
      expect(decoded.positions).toEqual(positions);
      expect(decoded.issuedAt).toBe(Math.floor(NOW_S));
    }
  });

  it('writes clusters in sorted order, so equal data gives equal tokens', () => {
    const c = codec();
    expect(c.encode({ positions: { b: '2', a: '1' } })).toBe(
      c.encode({ positions: { a: '1', b: '2' } }),
    );
    expect(c.encode({ positions: { b: '2', a: '1' }, issuedAt: 36 })).toBe(
      `${TOKEN_PREFIX}~10~a~1~b~2`,
    );
  });

  it('produces only URL- and cookie-safe characters', () => {
    const positions = { 'My_Cluster-1': 'Aa.Zz-09_', other: '0.0' };
    for (const c of [codec(), codec({ keys: [KEY_A] }), codec({ keys: [KEY_B] })]) {
      const token = c.encode({ positions });
      expect(encodeURIComponent(token)).toBe(token);
      expect(token).toMatch(/^[A-Za-z0-9_.~-]+$/);
    }
  });

  it('refuses to encode a position with unsafe characters', () => {
    expectTokenError(() => codec().encode({ positions: { a: '1/2' } }), ErrorCode.PositionInvalid);
    expectTokenError(() => codec().encode({ positions: { a: '' } }), ErrorCode.PositionInvalid);
  });

  it('refuses to encode more clusters than maxClusters, or a token longer than maxLength', () => {
    expectTokenError(
      () => codec({ maxClusters: 1 }).encode({ positions: { a: '1', b: '2' } }),
      ErrorCode.TokenTooLarge,
    );
    expectTokenError(
      () => codec({ maxLength: 20 }).encode({ positions: { a: '1'.repeat(20) } }),
      ErrorCode.TokenTooLarge,
    );
  });

  it('exposes maxClusters, so a Session.fromToken of its output can use the same limit', () => {
    expect(codec().maxClusters).toBe(16);
    expect(codec({ maxClusters: 40 }).maxClusters).toBe(40);
  });
});

describe('signatures', () => {
  it('signs with the first key and verifies', () => {
    const c = codec({ keys: [KEY_A] });
    expect(c.signs).toBe(true);
    const token = c.encode({ positions: { default: '1.10' } });
    expect(token).toContain('~~a~');
    expect(c.decode(token).positions).toEqual({ default: '1.10' });
  });

  it('rotation: the new key signs, the old key still verifies its tokens', () => {
    const before = codec({ keys: [KEY_A] });
    const after = codec({ keys: [KEY_B, KEY_A] });
    const old = before.encode({ positions: { default: '1.10' } });
    const fresh = after.encode({ positions: { default: '1.11' } });
    expect(fresh).toContain(`~~${KEY_B.id}~`);
    expect(after.decode(old).positions).toEqual({ default: '1.10' });
    expect(after.decode(fresh).positions).toEqual({ default: '1.11' });
    // A router that never got the new key cannot verify it.
    expectTokenError(() => before.decode(fresh), ErrorCode.TokenSignature);
  });

  it('rejects an altered payload', () => {
    const c = codec({ keys: [KEY_A] });
    const token = c.encode({ positions: { default: '1.10' } });
    const forged = token.replace('~default~1.10~~', '~default~1.99~~');
    expect(forged).not.toBe(token);
    expectTokenError(() => c.decode(forged), ErrorCode.TokenSignature);
  });

  it('rejects an altered signature, wherever the change is', () => {
    const c = codec({ keys: [KEY_A] });
    const token = c.encode({ positions: { default: '1.10' } });
    const start = token.lastIndexOf('~') + 1;
    for (const index of [start, start + 20, token.length - 1]) {
      expectTokenError(() => c.decode(alterAt(token, index)), ErrorCode.TokenSignature);
    }
    expectTokenError(() => c.decode(token.slice(0, -1)), ErrorCode.TokenSignature);
  });

  it('rejects a token signed with an unknown key id', () => {
    const signer = codec({ keys: [{ id: 'ghost', secret: 'g'.repeat(32) }] });
    const verifier = codec({ keys: [KEY_A] });
    const error = expectTokenError(
      () => verifier.decode(signer.encode({ positions: { default: '1.1' } })),
      ErrorCode.TokenSignature,
    );
    expect(error.message).toContain('ghost');
  });

  it('rejects a token signed by the right key id but another secret', () => {
    const impostor = codec({ keys: [{ id: 'a', secret: 'b'.repeat(32) }] });
    const token = impostor.encode({ positions: { default: '1.1' } });
    expectTokenError(() => codec({ keys: [KEY_A] }).decode(token), ErrorCode.TokenSignature);
  });

  it('rejects a signed token when this codec has no keys', () => {
    const token = codec({ keys: [KEY_A] }).encode({ positions: { default: '1.1' } });
    expectTokenError(() => codec().decode(token), ErrorCode.TokenSignature);
  });

  it('requires a signature when keys are configured (TIDEMARK_TOKEN_UNSIGNED)', () => {
    const unsigned = codec().encode({ positions: { default: '1.1' } });
    expectTokenError(() => codec({ keys: [KEY_A] }).decode(unsigned), ErrorCode.TokenUnsigned);
    // Opting out (a migration to signed tokens) accepts it.
    expect(codec({ keys: [KEY_A], requireSignature: false }).decode(unsigned).positions).toEqual({
      default: '1.1',
    });
  });

  it('rejects a malformed signature block', () => {
    const c = codec({ keys: [KEY_A] });
    const body = codec().encode({ positions: { default: '1.1' } });
    expectTokenError(() => c.decode(`${body}~~a`), ErrorCode.TokenMalformed);
    expectTokenError(() => c.decode(`${body}~~a~sig~more`), ErrorCode.TokenMalformed);
    expectTokenError(() => c.decode(`${body}~~${'k'.repeat(17)}~sig`), ErrorCode.TokenMalformed);
  });
});

describe('strict decoding', () => {
  it('checks the length before anything else (TIDEMARK_TOKEN_TOO_LARGE)', () => {
    const c = codec({ maxLength: 100 });
    // Not even a token, with characters a token never has: still "too large", not "malformed".
    expectTokenError(() => c.decode('%'.repeat(101)), ErrorCode.TokenTooLarge);
    expectTokenError(() => c.decode(`tm9~${'x'.repeat(97)}`), ErrorCode.TokenTooLarge);
    expectTokenError(() => codec().decode('a'.repeat(2049)), ErrorCode.TokenTooLarge);
  });

  it('rejects a newer format version (TIDEMARK_TOKEN_VERSION)', () => {
    expectTokenError(() => codec().decode('tm2~0~default~1.1'), ErrorCode.TokenVersion);
    expectTokenError(() => codec().decode('tm10~0'), ErrorCode.TokenVersion);
  });

  it.each([
    ['not a string', 42],
    ['empty', ''],
    ['no prefix', 'hello'],
    ['other prefix', 'xx1~0~default~1.1'],
    ['space', 'tm1~0~default~1.1 '],
    ['percent', 'tm1~0~default~1%2E1'],
    ['plus', 'tm1~0~default~1+1'],
    ['comma', 'tm1~0~default~1,1'],
    ['semicolon', 'tm1~0~default~1;1'],
    ['non-ASCII', 'tm1~0~défault~1.1'],
    ['prefix only', 'tm1'],
    ['missing position', 'tm1~0~default'],
    ['empty position', 'tm1~0~default~'],
    ['bad issuedAt', 'tm1~ZZ~default~1.1'],
    ['issuedAt too long', `tm1~${'1'.repeat(11)}~default~1.1`],
    ['bad cluster name', 'tm1~0~def.ault~1.1'],
    ['duplicate cluster', 'tm1~0~default~1.1~default~1.2'],
  ])('rejects %s with TIDEMARK_TOKEN_MALFORMED', (_name, text) => {
    expectTokenError(() => codec().decode(text), ErrorCode.TokenMalformed);
  });

  it('rejects more clusters than maxClusters', () => {
    expectTokenError(
      () => codec({ maxClusters: 2 }).decode('tm1~0~a~1~b~2~c~3'),
      ErrorCode.TokenTooLarge,
    );
  });

  it('rejects an issue time more than five minutes in the future', () => {
    const c = codec();
    const soon = c.encode({ positions: { a: '1' }, issuedAt: NOW_S + 299 });
    expect(c.decode(soon).issuedAt).toBe(NOW_S + 299);
    const future = c.encode({ positions: { a: '1' }, issuedAt: NOW_S + 301 });
    expectTokenError(() => c.decode(future), ErrorCode.TokenMalformed);
  });

  it('rejects a token older than maxAgeSeconds (TIDEMARK_TOKEN_EXPIRED)', () => {
    const c = codec({ maxAgeSeconds: 60 });
    expect(c.decode(c.encode({ positions: {}, issuedAt: NOW_S - 60 })).issuedAt).toBe(NOW_S - 60);
    expectTokenError(
      () => c.decode(c.encode({ positions: {}, issuedAt: NOW_S - 61 })),
      ErrorCode.TokenExpired,
    );
    // Without maxAgeSeconds, age is no reason to reject.
    expect(codec().decode(c.encode({ positions: {}, issuedAt: 0 })).issuedAt).toBe(0);
  });

  it('verifies the signature before trusting the issue time', () => {
    const c = codec({ keys: [KEY_A], maxAgeSeconds: 60 });
    const token = c.encode({ positions: { a: '1' } });
    // Moving issuedAt forward to dodge expiry breaks the signature.
    const [prefix, , ...rest] = token.split('~');
    const bumped = [prefix, (NOW_S + 1).toString(36), ...rest].join('~');
    expectTokenError(() => c.decode(bumped), ErrorCode.TokenSignature);
  });

  it('a cluster named __proto__ stays plain data', () => {
    const decoded = codec().decode('tm1~0~__proto__~1.1');
    expect(Object.keys(decoded.positions)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(decoded.positions)).toBe(Object.prototype);
  });
});

describe('configuration errors (ConfigError, TIDEMARK_CONFIG)', () => {
  it('rejects a secret shorter than 32 bytes', () => {
    expectConfigError(() => codec({ keys: [{ id: 'a', secret: 'x'.repeat(31) }] }), '31 bytes');
    expectConfigError(() => codec({ keys: [{ id: 'a', secret: new Uint8Array(16) }] }), '16 bytes');
    expect(() => codec({ keys: [{ id: 'a', secret: new Uint8Array(32) }] })).not.toThrow();
  });

  it('rejects duplicate and invalid key ids', () => {
    expectConfigError(() => codec({ keys: [KEY_A, { ...KEY_A }] }), 'unique');
    expectConfigError(() => codec({ keys: [{ id: 'a b', secret: 'x'.repeat(32) }] }));
    expectConfigError(() => codec({ keys: [{ id: 'k'.repeat(17), secret: 'x'.repeat(32) }] }));
    expectConfigError(() => codec({ keys: [{ id: '', secret: 'x'.repeat(32) }] }));
  });

  it('rejects requireSignature without keys and non-positive limits', () => {
    expectConfigError(() => codec({ requireSignature: true }), 'no signing keys');
    expectConfigError(() => codec({ maxLength: 0 }), 'maxLength');
    expectConfigError(() => codec({ maxClusters: 1.5 }), 'maxClusters');
    expectConfigError(() => codec({ maxAgeSeconds: -1 }), 'maxAgeSeconds');
  });

  it.each([
    ['empty', ''],
    ['dot', 'a.b'],
    ['space', 'a b'],
    ['tilde', 'a~b'],
    ['too long', 'c'.repeat(65)],
  ])('rejects a cluster name that is %s', (_name, name) => {
    expectConfigError(() => assertClusterName(name));
    expectConfigError(() => codec().encode({ positions: { [name]: '1' } }));
  });

  it('accepts cluster names of 1-64 characters from A-Z a-z 0-9 _ -', () => {
    for (const name of ['a', 'Orders_DB-2', 'c'.repeat(64)]) {
      expect(() => assertClusterName(name)).not.toThrow();
    }
  });
});
