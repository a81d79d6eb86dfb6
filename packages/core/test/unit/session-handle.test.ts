/**
 * `router.withSession(token)`: the D1-shaped handle over a session. Read-your-writes through the
 * handle and through the token it hands back, several routers sharing one handle's session (one
 * token, two clusters), and the bad-token policies on token text.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PRIMARY, Session, SessionHandle, TokenCodec, TokenError } from '../../src/index.js';
import { cp, type ScriptedAdapter } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture } from './helpers/router-fixture.js';

afterEach(closeFixtures);

/** Replicas behind the primary and paused: a session with the newest write needs the primary. */
const behind = {
  configure: (a: ScriptedAdapter) => {
    a.primary.position = cp('1.10');
    a.setAll({ applied: cp('1.10'), paused: true });
  },
};

const where = async (connection: { target: string }) => connection.target;

describe('router.withSession', () => {
  it('a write through the handle makes its next read, and the token it hands back, go to the primary', async () => {
    const f = await routerFixture(behind);
    const handle = f.router.withSession();
    expect(await f.clock.run(handle.token())).toBeUndefined();
    // Control: a fresh session reads from a replica.
    expect(await f.clock.run(f.router.withSession().read(where))).not.toBe(PRIMARY);

    f.adapter.primary.position = cp('1.11');
    await f.clock.run(handle.write(async () => 'written'));
    expect(await f.clock.run(handle.read(where))).toBe(PRIMARY);

    const token = await f.clock.run(handle.token());
    expect(token).toMatch(/^tm1/);
    // The next request: a new handle from the cookie.
    const next = f.router.withSession(token);
    expect(await f.clock.run(next.read(where))).toBe(PRIMARY);
    expect(await f.clock.run(f.router.withSession('').read(where))).not.toBe(PRIMARY);
  });

  it('transaction() runs the callback as one adapter transaction on the primary', async () => {
    const f = await routerFixture(behind);
    const handle = f.router.withSession();
    f.adapter.primary.position = cp('1.12');
    expect(await f.clock.run(handle.transaction(where))).toBe(PRIMARY);
    expect(f.adapter.calls.writes.at(-1)?.options).toMatchObject({ transaction: true });
    expect(await f.clock.run(handle.read(where))).toBe(PRIMARY);
  });

  it('handles made from one another share one session: one token carries both clusters', async () => {
    const a = await routerFixture({ ...behind, router: { cluster: 'orders' } });
    const b = await routerFixture({ ...behind, router: { cluster: 'billing' } });
    const onA = a.router.withSession();
    const onB = b.router.withSession(onA);
    expect(onB.session).toBe(onA.session);
    a.adapter.primary.position = cp('1.11');
    b.adapter.primary.position = cp('1.15');
    await a.clock.run(onA.write(async () => undefined));
    await b.clock.run(onB.write(async () => undefined));
    const token = await a.clock.run(onA.token());
    expect(await b.clock.run(onB.token())).toBe(token);
    const data = new TokenCodec().decode(token);
    expect(Object.keys(data.positions).sort()).toEqual(['billing', 'orders']);
    // Both databases read their own write back from the primary in the next request.
    expect(await a.clock.run(a.router.withSession(token).read(where))).toBe(PRIMARY);
    expect(await b.clock.run(b.router.withSession(token).read(where))).toBe(PRIMARY);
  });

  it('accepts a Session; run() makes it the request session for code that looks it up', async () => {
    const f = await routerFixture(behind);
    const session = new Session();
    const handle = f.router.withSession(session);
    expect(handle).toBeInstanceOf(SessionHandle);
    const { currentSession } = await import('../../src/index.js');
    expect(handle.run(() => currentSession())).toBe(session);
  });

  it("token text that does not decode: 'reject' throws a TokenError and counts it", async () => {
    const f = await routerFixture();
    for (const text of ['garbage', 'tm1~forged~~sig', 'x'.repeat(5000)]) {
      expect(() => f.router.withSession(text)).toThrow(TokenError);
    }
    expect(f.router.metrics().badTokens).toBe(3);
    expect(f.events.badToken).toHaveLength(3);
    expect(() => f.router.withSession(42 as unknown as string)).toThrow(/withSession takes/);
  });

  it("'ignore' counts it and starts an empty session", async () => {
    const f = await routerFixture({ router: { badToken: 'ignore' } });
    const handle = f.router.withSession('garbage');
    expect(handle.session.clusters()).toEqual([]);
    expect(f.router.metrics().badTokens).toBe(1);
  });

  it('signs with the router tokens codec and rejects an unsigned token then', async () => {
    const tokens = new TokenCodec({ keys: [{ id: 'k1', secret: 'a'.repeat(32) }] });
    const f = await routerFixture({ ...behind, router: { tokens } });
    const handle = f.router.withSession();
    f.adapter.primary.position = cp('1.11');
    await f.clock.run(handle.write(async () => undefined));
    const signed = await f.clock.run(handle.token());
    expect(signed).toContain('~~');
    expect(f.router.withSession(signed).session.clusters()).toEqual(['default']);
    const unsigned = new TokenCodec().encode(handle.session.toTokenData());
    expect(() => f.router.withSession(unsigned)).toThrow(TokenError);
  });

  it('getBookmark() is token() under D1s name', async () => {
    const f = await routerFixture(behind);
    const handle = f.router.withSession();
    f.adapter.primary.position = cp('1.11');
    await f.clock.run(handle.write(async () => undefined));
    expect(await f.clock.run(handle.getBookmark())).toBe(await f.clock.run(handle.token()));
  });
});
