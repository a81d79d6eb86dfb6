import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TokenCarrier } from '@tidemark/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookstoreApp } from '../src/app.js';
import { type Bookstore, startBookstore } from '../src/bookstore.js';

// The whole example over real HTTP: embedded PostgreSQL 18 (primary + streaming replica r1), a
// private redis-server for the token store, and the Express API on ephemeral ports.

interface Api {
  readonly url: string;
  readonly server: Server;
  readonly carrier: TokenCarrier;
}

interface OrdersBody {
  orders: Array<{ id: number; title: string }>;
  servedBy: string;
  reason: string;
}

/** What a client sees of one response: the body and the token it was handed, if any. */
interface Reply<T> {
  status: number;
  body: T;
  /** `tidemark=<token>` from Set-Cookie, ready to send back; undefined when none was set. */
  cookie: string | undefined;
  /** Value of the x-tidemark-token response header. */
  headerToken: string | null;
}

const COOKIE = 'tidemark';
/** Reasons a read that carried a valid token may have: it was honoured, never ignored. */
const TOKEN_HONOURED = ['replica-covered', 'replica-waited', 'primary-fallback'];

let bookstore: Bookstore;
/** The example as `start` runs it: signed cookie plus the Redis token store. */
let api: Api;
/** The example as `start --no-store` runs it: the control, cookie only. */
let control: Api;
const warnings: string[] = [];

async function listen(store: boolean): Promise<Api> {
  const carrier = bookstore.carrier({ store, logger: { warn: (line) => warnings.push(line) } });
  const server = bookstoreApp(bookstore.router, carrier).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, server, carrier };
}

async function stopServer(server: Server | undefined): Promise<void> {
  if (!server?.listening) return;
  const closed = once(server, 'close');
  server.close();
  // fetch keeps connections alive; close would otherwise wait for them to time out.
  server.closeAllConnections();
  await closed;
}

async function send<T>(
  target: Api,
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Reply<T>> {
  const response = await fetch(`${target.url}${path}`, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const cookie = response.headers
    .getSetCookie()
    .map((line) => line.split(';')[0] ?? '')
    .find((pair) => pair.startsWith(`${COOKIE}=`));
  return {
    status: response.status,
    body: (await response.json()) as T,
    cookie,
    headerToken: response.headers.get('x-tidemark-token'),
  };
}

function placeOrder(target: Api, user: string, title: string, cookie?: string) {
  return send<{ id: number; title: string }>(
    target,
    'POST',
    '/orders',
    { 'x-user': user, ...(cookie ? { cookie } : {}) },
    { title },
  );
}

function myOrders(target: Api, user: string, cookie?: string) {
  return send<OrdersBody>(target, 'GET', '/my/orders', {
    'x-user': user,
    ...(cookie ? { cookie } : {}),
  });
}

function tokenOf(cookie: string | undefined): string {
  if (!cookie) throw new Error('the response set no tidemark cookie');
  return cookie.slice(COOKIE.length + 1);
}

/** Orders of `customer` as one node holds them, read with plain SQL (no router). */
async function idsOn(node: string, customer: string): Promise<number[]> {
  if (!/^[a-z]+$/.test(customer)) throw new Error(`unsafe customer name ${customer}`);
  const rows = (await bookstore.cluster.exec(
    node,
    `SELECT id::int AS id FROM orders WHERE customer = '${customer}' ORDER BY id`,
  )) as Array<{ id: number }>;
  return rows.map((row) => row.id);
}

beforeAll(async () => {
  // 300 s lag threshold, as `start --pause-replay`: the paused replica stays in use.
  bookstore = await startBookstore({ maxLagSeconds: 300 });
  api = await listen(true);
  control = await listen(false);
}, 180_000);

afterAll(async () => {
  await stopServer(api?.server);
  await stopServer(control?.server);
  await bookstore?.close();
}, 120_000);

describe('express-bookstore over HTTP', () => {
  it('returns a signed token with an order and honours it on the next read (read-your-writes)', async () => {
    const placed = await placeOrder(api, 'ada', 'Dune');
    expect(placed.status).toBe(201);
    expect(placed.body).toEqual({ id: expect.any(Number), title: 'Dune' });
    const token = tokenOf(placed.cookie);
    expect(placed.headerToken).toBe(token);
    expect(bookstore.tokens.decode(token).positions['bookstore']).toMatch(/\S/);

    const read = await myOrders(api, 'ada', placed.cookie);
    expect(read.status).toBe(200);
    expect(read.body.orders).toContainEqual({ id: placed.body.id, title: 'Dune' });
    // Which node served it depends on how fast r1 replayed; the response must say which.
    expect(['r1', 'primary']).toContain(read.body.servedBy);
    expect(TOKEN_HONOURED).toContain(read.body.reason);
    expect(read.body.servedBy === 'r1').toBe(read.body.reason.startsWith('replica-'));
  });

  it('with replay paused, a tokenless read misses the order on r1; the token (or the store) finds it', async () => {
    const { cluster, replica } = bookstore;
    await cluster.pauseReplay(replica.name);
    try {
      // The control (no token store): the laptop keeps its cookie, the phone has none.
      const placed = await placeOrder(control, 'grace', 'Emma');
      expect(placed.status).toBe(201);
      const id = placed.body.id;
      // The anomaly itself, without the router: the primary has the order, r1 does not.
      expect(await idsOn(cluster.primary().name, 'grace')).toContain(id);
      expect(await idsOn(replica.name, 'grace')).not.toContain(id);

      const phone = await myOrders(control, 'grace');
      expect(phone.status).toBe(200);
      expect(phone.body).toMatchObject({ servedBy: 'r1', reason: 'no-token' });
      expect(phone.body.orders.map((order) => order.id)).not.toContain(id);

      // A paused replica cannot catch up, so the token's read goes to the primary.
      const laptop = await myOrders(control, 'grace', placed.cookie);
      expect(laptop.status).toBe(200);
      expect(laptop.body).toMatchObject({ servedBy: 'primary', reason: 'primary-fallback' });
      expect(laptop.body.orders).toContainEqual({ id, title: 'Emma' });

      // The example as shipped: the same cookieless read by the same user is not tokenless, the
      // Redis store (keyed by x-user) supplies the token, so this app cannot show the miss with
      // a dropped cookie alone; the control above and the direct read of r1 show it.
      const order = await placeOrder(api, 'hopper', 'Kim');
      expect(await idsOn(replica.name, 'hopper')).not.toContain(order.body.id);
      const otherDevice = await myOrders(api, 'hopper');
      expect(otherDevice.status).toBe(200);
      expect(otherDevice.body).toMatchObject({ servedBy: 'primary', reason: 'primary-fallback' });
      expect(otherDevice.body.orders).toContainEqual({ id: order.body.id, title: 'Kim' });
      // The other device gets its own cookie with the stored position.
      expect(bookstore.tokens.decode(tokenOf(otherDevice.cookie)).positions).toEqual(
        bookstore.tokens.decode(tokenOf(order.cookie)).positions,
      );
    } finally {
      await cluster.resumeReplay(replica.name);
    }
  });

  it('ignores a tampered or malformed token (the default policy), logs it once, keeps serving', async () => {
    const genuine = tokenOf((await placeOrder(api, 'ada', 'Middlemarch')).cookie);
    // Same signature, a position far ahead: trusted, it would make the read wait and go to the
    // primary; ignored, the read is served as for a new session.
    const fields = genuine.split('~');
    const at = fields.indexOf('bookstore') + 1;
    expect(at).toBeGreaterThan(0);
    fields[at] = '1.zzzzzzzz';
    const forged = fields.join('~');
    expect(forged).not.toBe(genuine);
    const before = api.carrier.metrics().badTokens;
    const warned = warnings.length;

    // A user who never wrote, so the store has nothing to add.
    const read = await myOrders(api, 'mallory', `${COOKIE}=${forged}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ orders: [], servedBy: 'r1', reason: 'no-token' });
    // The forged cookie is replaced by a genuine one holding what the read observed on r1.
    const fresh = tokenOf(read.cookie);
    expect(fresh).not.toBe(forged);
    expect(bookstore.tokens.decode(fresh).positions['bookstore']).toMatch(/\S/);
    expect(warnings.slice(warned)).toEqual([
      expect.stringMatching(/ignored a bad token from the cookie .*TIDEMARK_TOKEN_SIGNATURE/),
    ]);

    // Again from the same source, and in the header: counted, not logged again. Each forged
    // request comes from a new user: the read above stored mallory's fresh token in Redis.
    const again = await send<OrdersBody>(api, 'GET', '/my/orders', {
      'x-user': 'trudy',
      'x-tidemark-token': forged,
    });
    expect(again.status).toBe(200);
    expect(again.body.reason).toBe('no-token');
    // Not a token at all.
    const garbage = await myOrders(api, 'oscar', `${COOKIE}=%%%not-a-token`);
    expect(garbage.status).toBe(200);
    expect(garbage.body.reason).toBe('no-token');

    const after = api.carrier.metrics().badTokens;
    expect(
      (after['TIDEMARK_TOKEN_SIGNATURE'] ?? 0) - (before['TIDEMARK_TOKEN_SIGNATURE'] ?? 0),
    ).toBe(2);
    expect(
      (after['TIDEMARK_TOKEN_MALFORMED'] ?? 0) - (before['TIDEMARK_TOKEN_MALFORMED'] ?? 0),
    ).toBe(1);
    expect(warnings.slice(warned)).toHaveLength(2);
    expect(warnings.at(-1)).toMatch(/TIDEMARK_TOKEN_MALFORMED/);

    // Nothing crashed: the genuine token still works.
    const ok = await myOrders(api, 'ada', `${COOKIE}=${genuine}`);
    expect(ok.status).toBe(200);
    expect(ok.body.orders.map((order) => order.title)).toContain('Middlemarch');
    expect(TOKEN_HONOURED).toContain(ok.body.reason);
  });
});
