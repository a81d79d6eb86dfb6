// Tokens from every source (header, cookie, store) merge per cluster with the cluster's codec;
// what goes back is never lower than what came in; bad positions and unknown clusters are
// dropped and counted.
import { ConfigError, Session, TokenCodec } from '@tidemark/core';
import type { PositionCodec } from '@tidemark/core/adapter';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BadTokenEvent,
  type CarrierRequest,
  type CarrierScope,
  isRejection,
  TokenCarrier,
  type TokenCarrierSettings,
  type TokenStore,
} from '../../src/index.js';
import { historyCodec, routerLike } from '../support/history-codec.js';

const codec = new TokenCodec({ keys: [{ id: 'k', secret: 's'.repeat(32) }] });
const unsigned = new TokenCodec();

function request(headers: Record<string, string>): CarrierRequest {
  return { header: (name) => headers[name], secure: false, source: '10.0.0.9' };
}

function carrierWith(
  options: Partial<TokenCarrierSettings> & { tokens?: TokenCodec } = {},
): TokenCarrier {
  return new TokenCarrier({
    tokens: codec,
    logger: false,
    routers: [routerLike('main'), routerLike('other')],
    ...options,
  });
}

async function scopeOf(
  carrier: TokenCarrier,
  headers: Record<string, string>,
  userId?: string,
): Promise<CarrierScope> {
  const result = await carrier.begin(request(headers), userId);
  if (isRejection(result)) throw new Error(`unexpected rejection ${JSON.stringify(result)}`);
  return result;
}

/** Header and cookie carrying tokens with the given positions. */
function carrying(
  header: Record<string, string> | undefined,
  cookie: Record<string, string> | undefined,
  with_: TokenCodec = codec,
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (header) headers['x-tidemark-token'] = with_.encode({ positions: header });
  if (cookie) headers['cookie'] = `a=1; tidemark=${with_.encode({ positions: cookie })}`;
  return headers;
}

/** Positions written back: from Set-Cookie and from the response header (undefined if none). */
function written(
  scope: CarrierScope,
  with_: TokenCodec = codec,
): { cookie?: Record<string, string>; header?: Record<string, string>; cleared: boolean } {
  const out: {
    cookie?: Record<string, string>;
    header?: Record<string, string>;
    cleared: boolean;
  } = { cleared: false };
  for (const [name, value] of scope.responseHeaders(false)) {
    if (name === 'set-cookie') {
      const token = value.split(';')[0]?.slice('tidemark='.length) ?? '';
      if (token === '') out.cleared = true;
      else out.cookie = { ...with_.decode(token).positions };
    } else if (name === 'x-tidemark-token') {
      out.header = { ...with_.decode(value).positions };
    }
  }
  return out;
}

function memoryStore(initial: Record<string, Record<string, string>> = {}): TokenStore & {
  data: Map<string, Record<string, string>>;
} {
  const data = new Map(Object.entries(initial));
  return {
    data,
    codecs: { main: historyCodec as PositionCodec<unknown> },
    async get(userId) {
      const positions = data.get(userId);
      return positions ? { positions, issuedAt: 0 } : undefined;
    },
    async raise(userId, positions) {
      const session = Session.fromToken({ positions: data.get(userId) ?? {}, issuedAt: 0 });
      for (const [cluster, text] of Object.entries(positions)) {
        session.raise(cluster, historyCodec, historyCodec.decode(text));
      }
      data.set(userId, { ...session.toTokenData().positions });
    },
  };
}

describe('header and cookie merge per cluster', () => {
  it('routes on the newer cookie when the header carries an older token', async () => {
    const carrier = carrierWith();
    const scope = await scopeOf(carrier, carrying({ main: '1.5' }, { main: '1.9', other: '1.2' }));
    expect(scope.session.toTokenData().positions).toEqual({ main: '1.9', other: '1.2' });
    // The header was behind: both carriers are brought up to the merged token.
    expect(written(scope)).toEqual({
      cookie: { main: '1.9', other: '1.2' },
      header: { main: '1.9', other: '1.2' },
      cleared: false,
    });
    expect(carrier.metrics().sourceMerges).toBe(1);
  });

  it('takes the newer position per cluster, whichever source carries it', async () => {
    const scope = await scopeOf(
      carrierWith(),
      carrying({ main: '1.9', other: '1.1' }, { main: '1.5', other: '1.4' }),
    );
    expect(scope.session.toTokenData().positions).toEqual({ main: '1.9', other: '1.4' });
  });

  it('never writes back lower than the request carried, even after a lower raise', async () => {
    const scope = await scopeOf(carrierWith(), carrying({ main: '1.5' }, { main: '1.9' }));
    // The handler writes; its commit position (1.7) is below what the cookie carried.
    scope.run(() => scope.session.raise('main', historyCodec, { history: 1, seq: 7 }));
    const back = written(scope);
    expect(back.cookie?.['main']).toBe('1.9');
    expect(back.header?.['main']).toBe('1.9');
  });

  it('writes nothing when every source already carries the merged token', async () => {
    const scope = await scopeOf(carrierWith(), carrying({ main: '1.9' }, { main: '1.9' }));
    expect(scope.responseHeaders(false)).toEqual([]);
    const headerOnly = await scopeOf(carrierWith(), carrying({ main: '1.9' }, undefined));
    expect(headerOnly.responseHeaders(false)).toEqual([]);
  });

  it('merges the store too, and raises a store that is behind the client', async () => {
    const store = memoryStore({ ahead: { main: '1.20' }, behind: { main: '1.3' } });
    const carrier = carrierWith({ store });
    const ahead = await scopeOf(carrier, carrying({ main: '1.5' }, { main: '1.9' }), 'ahead');
    expect(ahead.session.positionText('main')).toBe('1.20');
    expect(written(ahead).cookie?.['main']).toBe('1.20');

    const behind = await scopeOf(carrier, carrying(undefined, { main: '1.9' }), 'behind');
    expect(behind.session.positionText('main')).toBe('1.9');
    await behind.commit();
    expect(store.data.get('behind')).toEqual({ main: '1.9' });
  });

  it('keeps a position from another history and surfaces the conflict', async () => {
    const carrier = carrierWith();
    const conflicts: unknown[] = [];
    carrier.events.on('history-conflict', (event) => conflicts.push(event));
    const scope = await scopeOf(carrier, carrying({ main: '1.50' }, { main: '2.3' }));
    // The codec's merge decides (the newer history); the router's check reports the rest.
    expect(scope.session.positionText('main')).toBe('2.3');
    expect(carrier.metrics().historyConflicts).toBe(1);
    expect(conflicts).toEqual([
      expect.objectContaining({ cluster: 'main', carrier: 'cookie', kept: '2.3', other: '1.50' }),
    ]);
    // Alone, a position from another history is carried as it is: only the router can judge it.
    const alone = await scopeOf(carrier, carrying(undefined, { main: '1.50' }));
    expect(alone.session.positionText('main')).toBe('1.50');
  });

  it('holds for arbitrary header, cookie and store positions and raises (fast-check)', async () => {
    const seq = fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined });
    await fc.assert(
      fc.asyncProperty(seq, seq, seq, seq, async (header, cookie, stored, raised) => {
        const store = memoryStore(stored === undefined ? {} : { u: { main: `1.${stored}` } });
        const carrier = carrierWith({ store });
        const at = (n: number | undefined) => (n === undefined ? undefined : { main: `1.${n}` });
        const scope = await scopeOf(carrier, carrying(at(header), at(cookie)), 'u');
        if (raised !== undefined)
          scope.session.raise('main', historyCodec, { history: 1, seq: raised });
        const carried = [header, cookie, stored].filter((n) => n !== undefined) as number[];
        const highest = Math.max(-1, ...carried, raised ?? -1);
        const held = scope.session.positionText('main');
        expect(held === undefined ? -1 : Number(held.slice(2))).toBe(highest);
        const back = written(scope);
        for (const positions of [back.cookie, back.header]) {
          if (positions) expect(Number(positions['main']?.slice(2))).toBe(highest);
        }
        // Nothing written means the client already holds the highest position.
        if (back.cookie === undefined && cookie !== undefined) expect(cookie).toBe(highest);
        if (back.header === undefined && header !== undefined) expect(header).toBe(highest);
      }),
      { numRuns: 300 },
    );
  });
});

describe('a bad position is no position for its cluster', () => {
  it('drops an invalid position, keeps the good ones, and counts it', async () => {
    const carrier = carrierWith();
    const events: BadTokenEvent[] = [];
    carrier.events.on('bad-token', (event) => events.push(event));
    const scope = await scopeOf(
      carrier,
      carrying(undefined, { main: 'not-a-position', other: '1.7' }),
    );
    expect(scope.session.toTokenData().positions).toEqual({ other: '1.7' });
    // Decoding in the router now finds no position instead of throwing.
    expect(scope.session.position('main', historyCodec)).toBeUndefined();
    expect(carrier.metrics().badTokens).toEqual({ TIDEMARK_POSITION_INVALID: 1 });
    expect(events).toEqual([
      expect.objectContaining({
        code: 'TIDEMARK_POSITION_INVALID',
        carrier: 'cookie',
        cluster: 'main',
      }),
    ]);
    // The cookie is rewritten without the bad position.
    expect(written(scope).cookie).toEqual({ other: '1.7' });
  });

  it('drops an oversized position', async () => {
    const carrier = carrierWith();
    const scope = await scopeOf(
      carrier,
      carrying({ main: `1.${'9'.repeat(600)}`, other: '1.2' }, undefined),
    );
    expect(scope.session.toTokenData().positions).toEqual({ other: '1.2' });
    expect(carrier.metrics().badTokens['TIDEMARK_POSITION_INVALID']).toBe(1);
  });

  it("answers 400 under badToken: 'reject'", async () => {
    const carrier = carrierWith({ badToken: 'reject' });
    const result = await carrier.begin(request(carrying({ main: 'zz', other: '1.2' }, undefined)));
    expect(isRejection(result)).toBe(true);
    if (isRejection(result)) expect(result.rejected.body.error).toBe('TIDEMARK_POSITION_INVALID');
  });
});

describe('clusters the carrier does not know are never echoed', () => {
  it('drops unknown clusters from an unsigned token and counts them', async () => {
    const carrier = carrierWith({ tokens: unsigned });
    const scope = await scopeOf(
      carrier,
      carrying(undefined, { main: '1.5', evil: '1.1', 'x-fake': '1.1' }, unsigned),
    );
    expect(scope.session.clusters()).toEqual(['main']);
    expect(carrier.metrics().unknownClusters).toBe(2);
    scope.session.raise('main', historyCodec, { history: 1, seq: 6 });
    expect(written(scope, unsigned)).toEqual({
      cookie: { main: '1.6' },
      header: { main: '1.6' },
      cleared: false,
    });
  });

  it('clears a cookie that carried only unknown clusters instead of echoing it', async () => {
    const carrier = carrierWith({ tokens: unsigned });
    const scope = await scopeOf(carrier, carrying(undefined, { evil: '1.1' }, unsigned));
    expect(scope.session.clusters()).toEqual([]);
    expect(written(scope, unsigned)).toEqual({ cleared: true });
  });

  it('knows the clusters of its routers, its codecs option and its store', async () => {
    const carrier = new TokenCarrier({
      tokens: unsigned,
      logger: false,
      routers: [routerLike('a')],
      codecs: { b: historyCodec as PositionCodec<unknown> },
      store: memoryStore(),
    });
    const scope = await scopeOf(
      carrier,
      carrying(undefined, { a: '1.1', b: '1.2', main: '1.3', z: '1.4' }, unsigned),
    );
    expect(scope.session.clusters().sort()).toEqual(['a', 'b', 'main']);
  });
});

describe('configuration', () => {
  it('refuses two codecs of different kinds for one cluster', () => {
    const other = { ...historyCodec, kind: 'other' } as PositionCodec<unknown>;
    expect(
      () =>
        new TokenCarrier({
          tokens: codec,
          logger: false,
          routers: [routerLike('main')],
          codecs: { main: other },
        }),
    ).toThrow(ConfigError);
  });

  it('warns once at construction when it knows no cluster (it cannot merge sources then)', () => {
    const lines: string[] = [];
    new TokenCarrier({ tokens: codec, logger: { warn: (line) => lines.push(line) } });
    expect(lines).toEqual([expect.stringMatching(/routers/)]);
  });
});

describe('robustness', () => {
  it('a header that drops an unknown cluster is not answered (no churn between services)', async () => {
    const carrier = carrierWith();
    const scope = await scopeOf(carrier, carrying({ main: '1.5', billing: '1.1' }, undefined));
    expect(scope.session.clusters()).toEqual(['main']);
    expect(scope.responseHeaders(false)).toEqual([]);
    expect(carrier.metrics().unknownClusters).toBe(1);
  });

  it('never throws on arbitrary header and cookie text with routers configured (fast-check)', async () => {
    const carrier = carrierWith();
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
          scope.responseHeaders(false);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never throws and keeps only known, decodable positions for arbitrary tokens (fast-check)', async () => {
    const carrier = carrierWith({ tokens: unsigned });
    const name = fc.oneof(
      fc.constantFrom('main', 'other'),
      fc.stringMatching(/^[A-Za-z0-9_-]{1,8}$/),
    );
    const position = fc.oneof(
      fc.tuple(fc.nat(9), fc.nat(99_999)).map(([h, n]) => `${h}.${n}`),
      fc.stringMatching(/^[A-Za-z0-9_.-]{1,30}$/),
    );
    const token = fc
      .dictionary(name, position, { maxKeys: 6 })
      .map((positions) => unsigned.encode({ positions }));
    await fc.assert(
      fc.asyncProperty(fc.option(token), fc.option(token), async (header, cookie) => {
        const headers: Record<string, string> = {};
        if (header !== null) headers['x-tidemark-token'] = header;
        if (cookie !== null) headers['cookie'] = `tidemark=${cookie}`;
        const scope = await scopeOf(carrier, headers);
        for (const cluster of scope.session.clusters()) {
          expect(['main', 'other']).toContain(cluster);
          expect(() => scope.session.position(cluster, historyCodec)).not.toThrow();
        }
        const back = written(scope, unsigned);
        for (const positions of [back.cookie, back.header]) {
          for (const cluster of Object.keys(positions ?? {})) {
            expect(['main', 'other']).toContain(cluster);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
