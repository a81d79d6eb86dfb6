import { describe, expect, it } from 'vitest';
import { ErrorCode, Session, TokenCodec, TokenError } from '../../src/index.js';
import { type CounterPosition, counterCodec } from '../support/counter-codec.js';
import { cp, cpText } from '../support/scripted-adapter.js';

const codec = counterCodec();

describe('Session.raise', () => {
  it('merges: raising to an older position keeps the newer one', () => {
    const session = new Session();
    expect(session.raise('db', codec, cp('1.5'))).toBe(true);
    expect(session.raise('db', codec, cp('1.3'))).toBe(false);
    expect(session.positionText('db')).toBe('1.5');
    expect(session.raise('db', codec, cp('1.7'))).toBe(true);
    expect(session.positionText('db')).toBe('1.7');
    expect(cpText(session.position('db', codec))).toBe('1.7');
  });

  it('uses the codec merge across histories (the newer history wins)', () => {
    const session = new Session();
    session.raise('db', codec, cp('1.9'));
    session.raise('db', codec, cp('2.3'));
    expect(session.positionText('db')).toBe('2.3');
    session.raise('db', codec, cp('1.50'));
    expect(session.positionText('db')).toBe('2.3');
  });

  it('increments version only when the stored position changes', () => {
    const session = new Session();
    expect(session.version).toBe(0);
    session.raise('db', codec, cp('1.5'));
    expect(session.version).toBe(1);
    session.raise('db', codec, cp('1.5'));
    session.raise('db', codec, cp('1.4'));
    expect(session.version).toBe(1);
    session.raise('db', codec, cp('1.6'));
    expect(session.version).toBe(2);
  });

  it('keeps clusters independent', () => {
    const session = new Session();
    session.raise('a', codec, cp('1.5'));
    session.raise('b', codec, cp('3.1'));
    expect(session.clusters().sort()).toEqual(['a', 'b']);
    expect(session.positionText('a')).toBe('1.5');
    expect(session.positionText('b')).toBe('3.1');
    expect(session.position('c', codec)).toBeUndefined();
  });

  it('replaces a stored position that does not decode', () => {
    const session = Session.fromToken({ positions: { db: 'garbage' }, issuedAt: 0 });
    expect(session.raise('db', codec, cp('1.2'))).toBe(true);
    expect(session.positionText('db')).toBe('1.2');
  });
});

describe('Session.position', () => {
  it("throws the codec's TokenError for text that does not decode", () => {
    const session = Session.fromToken({ positions: { db: 'x.y' }, issuedAt: 0 });
    const error = (() => {
      try {
        session.position('db', codec);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(TokenError);
    expect((error as TokenError).code).toBe(ErrorCode.PositionInvalid);
  });

  it('decodes once per codec and reuses the result', () => {
    let decodes = 0;
    const counting = {
      ...codec,
      decode(text: string): CounterPosition {
        decodes++;
        return codec.decode(text);
      },
    };
    const session = Session.fromToken({ positions: { db: '1.5' }, issuedAt: 0 });
    session.position('db', counting);
    session.position('db', counting);
    expect(decodes).toBe(1);
    // Another codec (another adapter) decodes for itself.
    const other = { ...counting };
    session.position('db', other);
    expect(decodes).toBe(2);
  });
});

describe('Session.forget', () => {
  it('removes the position and counts as a change; forgetting nothing does not', () => {
    const session = new Session();
    session.raise('db', codec, cp('1.5'));
    session.raise('other', codec, cp('1.1'));
    session.forget('db');
    expect(session.positionText('db')).toBeUndefined();
    expect(session.position('db', codec)).toBeUndefined();
    expect(session.positionText('other')).toBe('1.1');
    expect(session.version).toBe(3);
    session.forget('db');
    expect(session.version).toBe(3);
    // After forgetting, a lower position is accepted again.
    session.raise('db', codec, cp('1.2'));
    expect(session.positionText('db')).toBe('1.2');
  });
});

describe('Session and tokens', () => {
  it('fromToken / toTokenData round-trip through a TokenCodec', () => {
    const tokens = new TokenCodec({ keys: [{ id: 'k', secret: 's'.repeat(32) }] });
    const session = new Session();
    session.raise('pg', codec, cp('1.5'));
    session.raise('mysql', codec, cp('2.9'));
    const restored = Session.fromToken(tokens.decode(tokens.encode(session.toTokenData())));
    expect(restored.toTokenData()).toEqual({ positions: { pg: '1.5', mysql: '2.9' } });
    expect(cpText(restored.position('mysql', codec))).toBe('2.9');
    // Restoring is not a change: carriers only write back after a raise.
    expect(restored.version).toBe(0);
  });

  it('fromToken(undefined) is an empty session', () => {
    const session = Session.fromToken(undefined);
    expect(session.clusters()).toEqual([]);
    expect(session.toTokenData()).toEqual({ positions: {} });
  });

  // Regression: `__proto__` passes assertClusterName, but toTokenData assigns into a plain
  // object literal, where that key hits the prototype setter and the position silently vanishes
  // from the token (read-your-writes is lost for that cluster).
  it('keeps a cluster named __proto__ in its token data', () => {
    const session = new Session();
    session.raise('__proto__', codec, cp('1.5'));
    expect(session.clusters()).toEqual(['__proto__']);
    expect(Object.keys(session.toTokenData().positions)).toEqual(['__proto__']);
  });
});

// Regression: fromToken took any shape. `{ positions: null }` threw an untyped
// TypeError and `{ positions: 'main' }` produced clusters "0".."3".
describe('Session.fromToken validates its input', () => {
  function codeOf(fn: () => unknown): string {
    try {
      fn();
    } catch (error) {
      if (error instanceof TokenError) return error.code;
      return `untyped ${(error as Error).name}`;
    }
    return 'accepted';
  }
  const from = (data: unknown) => () => Session.fromToken(data as never);

  it('refuses positions that are not a plain object, with a message that says what to do', () => {
    expect(codeOf(from({ positions: null, issuedAt: 0 }))).toBe(ErrorCode.TokenMalformed);
    expect(codeOf(from({ positions: 'main', issuedAt: 0 }))).toBe(ErrorCode.TokenMalformed);
    expect(codeOf(from({ positions: ['1.5'], issuedAt: 0 }))).toBe(ErrorCode.TokenMalformed);
    expect(codeOf(from({ issuedAt: 0 }))).toBe(ErrorCode.TokenMalformed);
    expect(codeOf(from('tm1~0~main~1.5'))).toBe(ErrorCode.TokenMalformed);
    expect(codeOf(from(42))).toBe(ErrorCode.TokenMalformed);
    const error = (() => {
      try {
        Session.fromToken({ positions: null } as never);
      } catch (caught) {
        return caught as TokenError;
      }
      throw new Error('accepted');
    })();
    expect(error.message).toMatch(/TokenCodec\.decode/);
  });

  it('refuses position texts that are not strings', () => {
    expect(codeOf(from({ positions: { main: 5 }, issuedAt: 0 }))).toBe(ErrorCode.TokenMalformed);
    expect(codeOf(from({ positions: { main: null }, issuedAt: 0 }))).toBe(ErrorCode.TokenMalformed);
    expect(codeOf(from({ positions: { main: { seq: 1 } }, issuedAt: 0 }))).toBe(
      ErrorCode.TokenMalformed,
    );
  });

  it('refuses invalid cluster names', () => {
    expect(codeOf(from({ positions: { 'a b': '1.5' }, issuedAt: 0 }))).toBe(
      ErrorCode.TokenMalformed,
    );
    expect(codeOf(from({ positions: { '': '1.5' }, issuedAt: 0 }))).toBe(ErrorCode.TokenMalformed);
    expect(codeOf(from({ positions: { ['x'.repeat(65)]: '1.5' }, issuedAt: 0 }))).toBe(
      ErrorCode.TokenMalformed,
    );
  });

  it('refuses more clusters than the limit (default 64, or the given maxClusters)', () => {
    const many = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, '1.1']));
    expect(codeOf(from({ positions: many(65), issuedAt: 0 }))).toBe(ErrorCode.TokenTooLarge);
    expect(Session.fromToken({ positions: many(64), issuedAt: 0 }).clusters()).toHaveLength(64);
    expect(
      codeOf(() => Session.fromToken({ positions: many(3), issuedAt: 0 }, { maxClusters: 2 })),
    ).toBe(ErrorCode.TokenTooLarge);
    // A codec's own limit, passed through, accepts what the codec accepted.
    const tokens = new TokenCodec({ maxClusters: 100 });
    const big = tokens.decode(tokens.encode({ positions: many(80) }));
    expect(Session.fromToken(big, { maxClusters: tokens.maxClusters }).clusters()).toHaveLength(80);
  });

  it('still accepts what TokenCodec.decode returns, undefined and null', () => {
    const tokens = new TokenCodec();
    const data = tokens.decode(tokens.encode({ positions: { a: '1.5', __proto__x: '2.1' } }));
    expect(Session.fromToken(data).toTokenData()).toEqual({
      positions: { a: '1.5', __proto__x: '2.1' },
    });
    expect(Session.fromToken(undefined).clusters()).toEqual([]);
    expect(Session.fromToken(null as never).clusters()).toEqual([]);
    // Texts stay opaque here: the router decodes them with the cluster's codec (and applies its
    // bad-token policy), so a string that is not a position is still accepted.
    expect(Session.fromToken({ positions: { a: '%%%' }, issuedAt: 0 }).positionText('a')).toBe(
      '%%%',
    );
  });
});
