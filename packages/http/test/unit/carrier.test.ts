import { ConfigError, Session, TokenCodec } from '@tidemark/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { counterCodec } from '../../../redis/test/support/counter-codec.js';
import {
  type CarrierRequest,
  type CarrierScope,
  isRejection,
  readCookie,
  TokenCarrier,
  type TokenStore,
  tokenLifetimeSeconds,
} from '../../src/index.js';

const secretNew = 'n'.repeat(32);
const secretOld = 'o'.repeat(32);

function request(
  headers: Record<string, string>,
  source = '10.0.0.1',
  secure = false,
): CarrierRequest {
  return { header: (name) => headers[name], secure, source };
}

async function scopeOf(
  carrier: TokenCarrier,
  headers: Record<string, string>,
  userId?: string,
): Promise<CarrierScope> {
  const result = await carrier.begin(request(headers), userId);
  if (isRejection(result)) throw new Error('unexpected rejection');
  return result;
}

describe('tokenLifetimeSeconds', () => {
  it('is maxLag + sample age + margin: 16 s with router defaults', () => {
    expect(tokenLifetimeSeconds()).toBe(16);
    expect(tokenLifetimeSeconds({ maxLagSeconds: 300, maxSampleAgeMs: 1000 })).toBe(306);
    expect(tokenLifetimeSeconds({ maxLagSeconds: 2, maxSampleAgeMs: 500, marginSeconds: 0 })).toBe(
      3,
    );
    expect(() => tokenLifetimeSeconds({ maxLagSeconds: Number.NaN })).toThrow(ConfigError);
  });
});

describe('TokenCarrier', () => {
  it('takes the token codec as tokens, or under the deprecated name codec, and says when it has none', async () => {
    const tokens = new TokenCodec({ keys: [{ id: 'k', secret: secretNew }] });
    const token = tokens.encode({ positions: { main: '7' } });
    for (const carrier of [
      new TokenCarrier({ tokens, logger: false }),
      new TokenCarrier({ codec: tokens, logger: false }),
    ]) {
      expect(carrier.tokens).toBe(tokens);
      expect(carrier.codec).toBe(tokens);
      const scope = await scopeOf(carrier, { cookie: `tidemark=${token}` });
      expect(scope.session.positionText('main')).toBe('7');
    }
    expect(() => new TokenCarrier({ logger: false } as never)).toThrow(
      /TokenCarrier needs a token codec: pass tokens: new TokenCodec/,
    );
    expect(
      () => new TokenCarrier({ tokens, codec: new TokenCodec(), logger: false } as never),
    ).toThrow(ConfigError);
    // The same codec under both names is one codec, not two.
    expect(new TokenCarrier({ tokens, codec: tokens, logger: false } as never).tokens).toBe(tokens);
  });

  it('verifies tokens signed with a retired key (rotation) and re-signs with the new one', async () => {
    const oldCodec = new TokenCodec({ keys: [{ id: 'old', secret: secretOld }] });
    const rotated = new TokenCodec({
      keys: [
        { id: 'new', secret: secretNew },
        { id: 'old', secret: secretOld },
      ],
    });
    const carrier = new TokenCarrier({ tokens: rotated, logger: false });
    const scope = await scopeOf(carrier, {
      cookie: `tidemark=${oldCodec.encode({ positions: { main: '5' } })}`,
    });
    expect(scope.session.positionText('main')).toBe('5');
    scope.session.raise('main', counterCodec, 6);
    const setCookie =
      scope.responseHeaders(true).find(([name]) => name === 'set-cookie')?.[1] ?? '';
    expect(setCookie).toContain('~~new~');
    expect(setCookie).toMatch(/; Secure$/);
  });

  it('ignores expired, oversized, unsigned and malformed tokens by default, counting each reason', async () => {
    let now = 1_700_000_000_000;
    const codec = new TokenCodec({
      keys: [{ id: 'k', secret: secretNew }],
      maxAgeSeconds: 16,
      now: () => now,
    });
    const carrier = new TokenCarrier({ tokens: codec, logger: false });
    const expired = codec.encode({ positions: { main: '5' } });
    now += 17_000;
    const inputs = [
      expired,
      `tm1~${'a'.repeat(5000)}`,
      'tm1~1~main~5',
      'not a token',
      'tm1~\u00e9',
    ];
    for (const token of inputs) {
      const scope = await scopeOf(carrier, { 'x-tidemark-token': token });
      expect(scope.session.clusters()).toEqual([]);
    }
    expect(carrier.metrics().badTokens).toEqual({
      TIDEMARK_TOKEN_EXPIRED: 1,
      TIDEMARK_TOKEN_TOO_LARGE: 1,
      TIDEMARK_TOKEN_UNSIGNED: 1,
      TIDEMARK_TOKEN_MALFORMED: 2,
    });
  });

  it('logs a bad token once per source and reason, with bounded memory', async () => {
    const lines: string[] = [];
    const carrier = new TokenCarrier({
      tokens: new TokenCodec(),
      codecs: { main: counterCodec as never },
      logger: { warn: (line) => lines.push(line) },
      logMemory: 2,
    });
    const bad = { 'x-tidemark-token': 'garbage' };
    for (let i = 0; i < 5; i++) await carrier.begin(request(bad, '1.1.1.1'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/source 1\.1\.1\.1.*TIDEMARK_TOKEN_MALFORMED/);
    await carrier.begin(request(bad, '2.2.2.2'));
    await carrier.begin(request(bad, '3.3.3.3')); // evicts 1.1.1.1 (memory of 2)
    await carrier.begin(request(bad, '1.1.1.1'));
    expect(lines).toHaveLength(4);
    expect(carrier.metrics().badTokens['TIDEMARK_TOKEN_MALFORMED']).toBe(8);
  });

  it('never lets a slow or failing store hold a request longer than storeTimeoutMs', async () => {
    const hanging: TokenStore = {
      codecs: { main: counterCodec as never },
      get: () => new Promise(() => undefined),
      raise: () => Promise.reject(new Error('redis down')),
    };
    const carrier = new TokenCarrier({
      tokens: new TokenCodec(),
      logger: false,
      store: hanging,
      storeTimeoutMs: 50,
    });
    const started = Date.now();
    const scope = await scopeOf(carrier, {}, 'user');
    expect(Date.now() - started).toBeLessThan(500);
    scope.session.raise('main', counterCodec, 3);
    await scope.commit();
    expect(carrier.metrics().storeErrors).toBe(2);
    expect(scope.responseHeaders(false).length).toBe(2);
  });

  it('begin never throws on arbitrary header and cookie text (fast-check)', async () => {
    const codec = new TokenCodec({ keys: [{ id: 'k', secret: secretNew }] });
    const carrier = new TokenCarrier({ tokens: codec, logger: false });
    const valid = codec.encode({ positions: { main: '9' } });
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.string({ unit: 'binary', maxLength: 3000 })),
        fc.option(fc.string({ unit: 'grapheme', maxLength: 300 })),
        async (header, cookie) => {
          const headers: Record<string, string> = {};
          if (header !== null) headers['x-tidemark-token'] = header;
          if (cookie !== null) headers['cookie'] = `tidemark=${cookie}`;
          const scope = await scopeOf(carrier, headers);
          expect(scope.session.clusters()).toEqual([]);
        },
      ),
      { numRuns: 2000 },
    );
    // ...while a valid token next to garbage is still honoured.
    const scope = await scopeOf(carrier, {
      'x-tidemark-token': 'garbage',
      cookie: `tidemark=${valid}`,
    });
    expect(scope.session.positionText('main')).toBe('9');
  });

  it('reads cookies defensively', () => {
    expect(readCookie('a=1; tidemark="tm1~x"; b=2', 'tidemark')).toBe('tm1~x');
    expect(readCookie('tidemarkx=1; =; ;;', 'tidemark')).toBeUndefined();
    expect(readCookie(undefined, 'tidemark')).toBeUndefined();
  });

  it('writes nothing back for an unchanged session', async () => {
    const carrier = new TokenCarrier({ tokens: new TokenCodec(), logger: false });
    const session = new Session();
    session.raise('main', counterCodec, 4);
    const token = new TokenCodec().encode(session.toTokenData());
    const scope = await scopeOf(carrier, { 'x-tidemark-token': token });
    expect(scope.changed).toBe(false);
    expect(scope.responseHeaders(false)).toEqual([]);
  });
});
