import { connect } from 'node:net';
import { runWithSession, Session, TokenCodec } from '@tidemark/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterCodec } from '../../../redis/test/support/counter-codec.js';
import { createForwardingFetch, TokenCarrier, type TokenStore } from '../../src/index.js';
import { FRAMEWORKS, type RunningServer, startServer } from './servers.js';

const keys = [{ id: 'k1', secret: 'a'.repeat(32) }];
const codec = new TokenCodec({ keys, maxAgeSeconds: 60 });

/** An in-memory store that records raises, to see the adapters await them. */
function memoryStore(): TokenStore & { data: Map<string, Record<string, string>> } {
  const data = new Map<string, Record<string, string>>();
  return {
    data,
    codecs: { main: counterCodec as never },
    async get(userId) {
      const positions = data.get(userId);
      return positions ? { positions, issuedAt: 0 } : undefined;
    },
    async raise(userId, positions) {
      await new Promise((resolve) => setTimeout(resolve, 20)); // slower than the response path
      const current = Number(data.get(userId)?.['main'] ?? 0);
      data.set(userId, { main: String(Math.max(current, Number(positions['main'] ?? 0))) });
    },
  };
}

describe.each(FRAMEWORKS)('%s adapter', (framework) => {
  const store = memoryStore();
  const carrier = new TokenCarrier({ tokens: codec, logger: false, store });
  const strict = new TokenCarrier({ tokens: codec, logger: false, badToken: 'reject' });
  let server: RunningServer;
  let strictServer: RunningServer;

  beforeAll(async () => {
    server = await startServer(framework, carrier);
    strictServer = await startServer(framework, strict);
  });
  afterAll(async () => {
    await server.close();
    await strictServer.close();
  });

  it('writes the token back only on responses that raised it, and reads it from the cookie', async () => {
    const quiet = await fetch(`${server.url}/peek`);
    expect(quiet.headers.get('set-cookie')).toBeNull();
    const raised = await fetch(`${server.url}/raise?to=41`, { method: 'POST' });
    const setCookie = raised.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(
      /^tidemark=tm1~[^;]+~~k1~[^;]+; Max-Age=16; Path=\/; HttpOnly; SameSite=Lax$/,
    );
    expect(raised.headers.get('x-tidemark-token')).toBe(
      setCookie.split(';')[0]?.slice('tidemark='.length),
    );
    const next = await fetch(`${server.url}/peek`, {
      headers: { cookie: `a=b; ${setCookie.split(';')[0]}` },
    });
    expect(await next.json()).toEqual({ clusters: ['main'], main: '41' });
    expect(next.headers.get('set-cookie')).toBeNull();
  });

  it('accepts the token from the header (service to service)', async () => {
    const token = codec.encode({ positions: { main: '7' } });
    const response = await fetch(`${server.url}/peek`, { headers: { 'x-tidemark-token': token } });
    expect(await response.json()).toEqual({ clusters: ['main'], main: '7' });
  });

  it('raises the user’s store before the response completes, and merges it on another device', async () => {
    const user = `u-${framework}`;
    await fetch(`${server.url}/raise?to=99`, { method: 'POST', headers: { 'x-user': user } });
    expect(store.data.get(user)).toEqual({ main: '99' });
    const otherDevice = await fetch(`${server.url}/peek`, { headers: { 'x-user': user } });
    expect(await otherDevice.json()).toEqual({ clusters: ['main'], main: '99' });
  });

  // Regression: the header's older token won over the cookie's newer
  // one, the read missed the write, and the response lowered the cookie.
  it('merges an older header token with a newer cookie token and never lowers the cookie', async () => {
    const headers = {
      'x-tidemark-token': codec.encode({ positions: { main: '5' } }),
      cookie: `tidemark=${codec.encode({ positions: { main: '9' } })}`,
    };
    const peek = await fetch(`${server.url}/peek`, { headers });
    expect(await peek.json()).toEqual({ clusters: ['main'], main: '9' });
    // A write whose position (7) lies below what the cookie carried.
    const raised = await fetch(`${server.url}/raise?to=7`, { method: 'POST', headers });
    const cookieToken = (raised.headers.get('set-cookie') ?? '').split(';')[0]?.slice(9) ?? '';
    expect(codec.decode(cookieToken).positions).toEqual({ main: '9' });
    const headerToken = raised.headers.get('x-tidemark-token') ?? '';
    expect(codec.decode(headerToken).positions).toEqual({ main: '9' });
  });

  it('rejects a bad token with 400 under badToken: reject, and counts it', async () => {
    const response = await fetch(`${strictServer.url}/peek`, {
      headers: { cookie: 'tidemark=tm1~garbage' },
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(/^TIDEMARK_TOKEN_/);
    expect(strict.metrics().rejected).toBeGreaterThan(0);
  });

  it('never crashes on fuzzed headers: random bytes, huge values, unicode (fast-check)', async () => {
    const port = Number(new URL(server.url).port);
    const before = carrier.metrics();
    let answered = 0;
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc
            .string({ unit: 'grapheme', maxLength: 200 })
            .map((text) => new TextEncoder().encode(text)),
          fc.integer({ min: 2_000, max: 60_000 }).map((size) => new Uint8Array(size).fill(0x41)),
          fc
            .constantFrom('tm1~', 'tm1~zz~main~1~~k1~x', 'tm9~1~a~b', '"tm1~"')
            .map((t) => new TextEncoder().encode(t)),
        ),
        fc.boolean(),
        async (bytes, inCookie) => {
          const status = await rawGet(port, bytes, inCookie);
          statuses.add(status);
          answered++;
          // 200: ignored as no token; 400/431: refused by Node's HTTP parser. Never 5xx.
          expect([200, 400, 431]).toContain(status);
        },
      ),
      { numRuns: 150 },
    );
    expect(answered).toBe(150);
    expect(statuses.has(200)).toBe(true);
    // Bad tokens that reached the carrier were counted.
    const badBefore = Object.values(before.badTokens).reduce((a, b) => a + b, 0);
    const badAfter = Object.values(carrier.metrics().badTokens).reduce((a, b) => a + b, 0);
    expect(badAfter).toBeGreaterThan(badBefore);
    // The server still serves normal requests afterwards.
    expect((await fetch(`${server.url}/peek`)).status).toBe(200);
  });
});

describe('forwarding fetch', () => {
  it('forwards the current token downstream, and a downstream raise comes back', async () => {
    const downstreamCarrier = new TokenCarrier({ tokens: codec, logger: false, cookie: false });
    const downstream = await startServer('hono', downstreamCarrier);
    const forwardingFetch = createForwardingFetch({
      tokens: codec,
      codecs: { main: counterCodec as never },
    });
    try {
      const session = new Session();
      session.raise('main', counterCodec, 12);
      const seen = await runWithSession(session, async () => {
        const response = await forwardingFetch(`${downstream.url}/peek`);
        return response.json();
      });
      expect(seen).toEqual({ clusters: ['main'], main: '12' });
      // The downstream service writes (raises to 30) and returns its token: we see it too.
      await runWithSession(session, () =>
        forwardingFetch(`${downstream.url}/raise?to=30`, { method: 'POST' }),
      );
      expect(session.positionText('main')).toBe('30');
      // CONTROL: plain fetch forwards nothing.
      const plain = await runWithSession(session, async () =>
        (await fetch(`${downstream.url}/peek`)).json(),
      );
      expect(plain).toEqual({ clusters: [], main: null });
    } finally {
      await downstream.close();
    }
  });
});

describe('forwarding fetch with reads carried from an earlier request', () => {
  it('passes a carried read this service never routed on downstream as pending', async () => {
    const sent: string[] = [];
    const forwardingFetch = createForwardingFetch({
      tokens: codec,
      codecs: { main: counterCodec as never },
      fetch: (async (_input: unknown, init?: RequestInit) => {
        sent.push(new Headers(init?.headers).get('x-tidemark-token') ?? '');
        return new Response('ok');
      }) as typeof fetch,
    });
    const session = Session.fromToken({
      positions: { main: '12' },
      pending: { main: ['r1'] },
      issuedAt: 0,
    });
    await runWithSession(session, () => forwardingFetch('http://downstream.invalid/peek'));
    const forwarded = codec.decode(sent[0]);
    expect(forwarded.positions).toEqual({ main: '12' });
    expect(forwarded.pending).toEqual({ main: ['r1'] });
  });
});

describe('forwarding fetch options', () => {
  it('signs with tokens, or with the deprecated codec, and refuses to start without either', async () => {
    for (const options of [{ tokens: codec }, { codec }]) {
      const sent: string[] = [];
      const forwardingFetch = createForwardingFetch({
        ...options,
        fetch: (async (_input: unknown, init?: RequestInit) => {
          sent.push(new Headers(init?.headers).get('x-tidemark-token') ?? '');
          return new Response('ok');
        }) as typeof fetch,
      });
      const session = Session.fromToken({ positions: { main: '4' }, issuedAt: 0 });
      await runWithSession(session, () => forwardingFetch('http://downstream.invalid/'));
      expect(codec.decode(sent[0]).positions).toEqual({ main: '4' });
    }
    expect(() => createForwardingFetch({} as never)).toThrow(
      /createForwardingFetch needs a token codec/,
    );
  });
});

describe('forwarding fetch with an explicit token header', () => {
  // A token the caller sets itself (say, relayed from its own client) is merged with the
  // session's, never replaced by a lower one.
  it('forwards the merge of the session and the explicit token', async () => {
    const downstreamCarrier = new TokenCarrier({ tokens: codec, logger: false, cookie: false });
    const downstream = await startServer('express', downstreamCarrier);
    const forwardingFetch = createForwardingFetch({
      tokens: codec,
      routers: [{ cluster: 'main', codec: counterCodec as never }],
    });
    try {
      const session = new Session();
      session.raise('main', counterCodec, 12);
      const explicit = codec.encode({ positions: { main: '20' } });
      const seen = await runWithSession(session, async () =>
        (
          await forwardingFetch(`${downstream.url}/peek`, {
            headers: { 'x-tidemark-token': explicit },
          })
        ).json(),
      );
      expect(seen).toEqual({ clusters: ['main'], main: '20' });
      // Lower explicit token: the session's higher one goes.
      const lower = codec.encode({ positions: { main: '3' } });
      const seenLower = await runWithSession(session, async () =>
        (
          await forwardingFetch(`${downstream.url}/peek`, {
            headers: { 'x-tidemark-token': lower },
          })
        ).json(),
      );
      expect(seenLower).toEqual({ clusters: ['main'], main: '12' });
    } finally {
      await downstream.close();
    }
  });
});

/** A GET over a raw socket, so header bytes reach the server unvalidated by a client. */
function rawGet(port: number, value: Uint8Array, inCookie: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const clean = Buffer.from(value.filter((byte) => byte !== 0x0d && byte !== 0x0a));
    const name = inCookie ? 'cookie: tidemark=' : 'x-tidemark-token: ';
    const socket = connect(port, '127.0.0.1');
    let response = '';
    socket.setTimeout(10_000, () => reject(new Error('no answer within 10 s')));
    socket.on('data', (chunk) => {
      response += chunk.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(response);
      if (match) resolve(Number(match[1]));
      else reject(new Error(`no HTTP status in answer: ${JSON.stringify(response.slice(0, 80))}`));
    });
    socket.write(
      Buffer.concat([
        Buffer.from(`GET /peek HTTP/1.1\r\nhost: x\r\nconnection: close\r\n${name}`),
        clean,
        Buffer.from('\r\n\r\n'),
      ]),
    );
  });
}
