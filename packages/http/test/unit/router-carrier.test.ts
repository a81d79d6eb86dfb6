// The carrier in front of a real core Router over an in-memory cluster: what a request carries
// decides where its reads go, end to end: sources that disagree, and bad positions.
import { currentSession, Router, TokenCodec } from '@tidemark/core';
import type { Adapter } from '@tidemark/core/adapter';
import { afterEach, describe, expect, it } from 'vitest';
import { isRejection, TokenCarrier } from '../../src/index.js';
import { type HistoryPosition, historyCodec } from '../support/history-codec.js';

/** A primary and one replica whose applied position the test sets; reads return it. */
function memoryCluster(primarySeq: number, replicaSeq: number) {
  const state = { primarySeq, replicaSeq };
  const at = (seq: number): HistoryPosition => ({ history: 1, seq });
  const adapter: Adapter<HistoryPosition, string> = {
    codec: historyCodec,
    replicas: ['r1'],
    async read(target, fn) {
      const seq = target === 'primary' ? state.primarySeq : state.replicaSeq;
      return { value: await fn(String(seq)), observed: at(seq) };
    },
    async write(fn) {
      state.primarySeq++;
      return { value: await fn('primary'), position: at(state.primarySeq) };
    },
    async probe() {
      return { applied: at(state.replicaSeq), lagSeconds: 0 };
    },
    async probePrimary() {
      return at(state.primarySeq);
    },
    async close() {},
  };
  return { adapter, state };
}

const routers: Array<Router<HistoryPosition, string>> = [];
afterEach(async () => {
  await Promise.all(routers.splice(0).map((router) => router.close()));
});

async function routerOver(primarySeq: number, replicaSeq: number) {
  const { adapter } = memoryCluster(primarySeq, replicaSeq);
  const router = new Router({ adapter, cluster: 'main', wait: { budgetMs: 0 } });
  routers.push(router);
  await router.ready();
  return router;
}

/**
 * A router over an adapter that reports nothing with its reads (the router settles them from a
 * probe); `onProbe` sees every probe.
 */
async function silentRouterOver(primarySeq: number, replicaSeq: number, onProbe?: () => void) {
  const { adapter, state } = memoryCluster(primarySeq, replicaSeq);
  const silent: Adapter<HistoryPosition, string> = {
    ...adapter,
    read: async (target, fn) => ({ value: await fn(target) }),
    probe: async (id, context) => {
      onProbe?.();
      return adapter.probe(id, context);
    },
  };
  const router = new Router({ adapter: silent, cluster: 'main', wait: { budgetMs: 0 } });
  routers.push(router);
  await router.ready();
  return { router, state };
}

const codec = new TokenCodec({ keys: [{ id: 'k', secret: 'r'.repeat(32) }] });

async function readThrough(
  carrier: TokenCarrier,
  router: Router<HistoryPosition, string>,
  headers: Record<string, string>,
) {
  const scope = await carrier.begin({ header: (name) => headers[name], secure: false });
  if (isRejection(scope)) throw new Error('rejected');
  const read = await scope.run(() =>
    router.readDetailed(currentSession(), async (seq) => Number(seq)),
  );
  return { read, scope };
}

describe('carrier + router', () => {
  it('a newer cookie next to an older header sends the read where the write is', async () => {
    // The session wrote 5 (header token) and later 9 (cookie token); the replica has 5 only.
    const router = await routerOver(9, 5);
    const carrier = new TokenCarrier({ tokens: codec, logger: false, routers: [router] });
    const { read, scope } = await readThrough(carrier, router, {
      'x-tidemark-token': codec.encode({ positions: { main: '1.5' } }),
      cookie: `tidemark=${codec.encode({ positions: { main: '1.9' } })}`,
    });
    expect(read.decision.target).toBe('primary');
    expect(read.value).toBeGreaterThanOrEqual(9);
    const cookie = scope.responseHeaders(false).find(([name]) => name === 'set-cookie')?.[1] ?? '';
    const token = cookie.split(';')[0]?.slice('tidemark='.length) ?? '';
    expect(historyCodec.decode(codec.decode(token).positions['main'] ?? '').seq).toBe(9);
  });

  it('a bad position for the cluster reads as no position instead of throwing', async () => {
    // The router rejects bad positions (its default); the carrier's ignore policy must drop
    // them first, while the good position of another cluster stays.
    const router = await routerOver(9, 9);
    const carrier = new TokenCarrier({
      tokens: codec,
      logger: false,
      routers: [router],
      codecs: { other: historyCodec as never },
    });
    const { read, scope } = await readThrough(carrier, router, {
      cookie: `tidemark=${codec.encode({ positions: { main: '9x', other: '1.4' } })}`,
    });
    expect(read.decision.reason).toBe('no-token');
    expect(scope.session.positionText('other')).toBe('1.4');
    expect(router.metrics().badTokens).toBe(0);
    expect(carrier.metrics().badTokens).toEqual({ TIDEMARK_POSITION_INVALID: 1 });
  });
});

describe('carrier + router: positions that reads observe', () => {
  it('a read whose position is settled later still reaches the response token (invariant 3)', async () => {
    // An adapter that reports nothing with the read: the router settles it from a probe.
    const { router, state } = await silentRouterOver(12, 12);
    state.replicaSeq = 15; // the replica moved on before the read: the read saw 15
    const carrier = new TokenCarrier({ tokens: codec, logger: false, routers: [router] });
    const scope = await carrier.begin({ header: () => undefined, secure: false });
    if (isRejection(scope)) throw new Error('rejected');
    await scope.run(() => router.readDetailed(currentSession(), async (seq) => seq));
    expect(scope.session.unsettled).toBe(true);
    await scope.commit();
    const cookie = scope.responseHeaders(false).find(([name]) => name === 'set-cookie')?.[1] ?? '';
    const token = cookie.split(';')[0]?.slice('tidemark='.length) ?? '';
    expect(historyCodec.decode(codec.decode(token).positions['main'] ?? '').seq).toBe(15);
    expect(carrier.metrics()).toMatchObject({ unsettledResponses: 0, settleErrors: 0 });
  });

  it('carryPending: the response carries the read instead of probing; the next request reads the same replica, no probe', async () => {
    let probes = 0;
    const { router, state } = await silentRouterOver(12, 12, () => {
      probes++;
    });
    state.replicaSeq = 15;
    const carrier = new TokenCarrier({
      tokens: codec,
      logger: false,
      routers: [router],
      carryPending: true,
    });
    const request = async (cookieToken?: string) => {
      const headers: Record<string, string> =
        cookieToken === undefined ? {} : { cookie: `tidemark=${cookieToken}` };
      const scope = await carrier.begin({ header: (name) => headers[name], secure: false });
      if (isRejection(scope)) throw new Error('rejected');
      const read = await scope.run(() => router.readDetailed(currentSession(), async (seq) => seq));
      await scope.commit();
      const cookie = scope.responseHeaders(false).find(([n]) => n === 'set-cookie')?.[1];
      return { read, token: cookie?.split(';')[0]?.slice('tidemark='.length) };
    };
    const before = probes;
    const first = await request();
    expect(probes).toBe(before); // nothing settled before the response
    const token = first.token ?? '';
    expect(codec.decode(token).pending).toEqual({ main: ['r1'] });
    // The next request reads r1 again: monotonic by itself, still no probe; same pending, so
    // the client's token stays as it is (no Set-Cookie).
    const second = await request(token);
    expect(second.read.decision.target).toBe('r1');
    expect(probes).toBe(before);
    expect(second.token).toBeUndefined();
    expect(carrier.metrics()).toMatchObject({ unsettledResponses: 0, settleErrors: 0 });
  });

  it('carryPending: a read the primary served is settled, not carried (the next request could only settle it later, at a newer primary position)', async () => {
    const { router } = await silentRouterOver(12, 5);
    const carrier = new TokenCarrier({
      tokens: codec,
      logger: false,
      routers: [router],
      carryPending: true,
    });
    const { read, scope } = await readThrough(carrier, router, {
      cookie: `tidemark=${codec.encode({ positions: { main: '1.9' } })}`,
    });
    expect(read.decision.target).toBe('primary');
    await scope.commit();
    const cookie = scope.responseHeaders(false).find(([name]) => name === 'set-cookie')?.[1] ?? '';
    const data = codec.decode(cookie.split(';')[0]?.slice('tidemark='.length) ?? '');
    expect(data.pending).toBeUndefined();
    expect(historyCodec.decode(data.positions['main'] ?? '').seq).toBe(12);
    expect(carrier.metrics()).toMatchObject({ unsettledResponses: 0, settleErrors: 0 });
  });

  it('carryPending: a request that does not route on the cluster passes the carried read on', async () => {
    const router = await routerOver(12, 12);
    const carrier = new TokenCarrier({
      tokens: codec,
      logger: false,
      routers: [router],
      carryPending: true,
    });
    const token = codec.encode({
      positions: { main: historyCodec.encode({ history: 1, seq: 3 }) },
      pending: { main: ['r1'] },
    });
    const scope = await carrier.begin({
      header: (name) => (name === 'cookie' ? `tidemark=${token}` : undefined),
      secure: false,
    });
    if (isRejection(scope)) throw new Error('rejected');
    expect(scope.session.pendingTargets('main')).toEqual(['r1']);
    await scope.commit();
    // Nothing changed: the client keeps its token, pending read included.
    expect(scope.responseHeaders(false)).toEqual([]);
    expect(carrier.metrics().settleErrors).toBe(0);
  });

  it('without carryPending, a carried read is settled by the request that routes on it', async () => {
    const { router } = await silentRouterOver(12, 15);
    const carrier = new TokenCarrier({ tokens: codec, logger: false, routers: [router] });
    const token = codec.encode({ positions: {}, pending: { main: ['r1'] } });
    const { scope } = await readThrough(carrier, router, { cookie: `tidemark=${token}` });
    await scope.commit();
    const cookie = scope.responseHeaders(false).find(([n]) => n === 'set-cookie')?.[1] ?? '';
    const written = codec.decode(cookie.split(';')[0]?.slice('tidemark='.length) ?? '');
    expect(written.pending).toBeUndefined();
    expect(historyCodec.decode(written.positions['main'] ?? '').seq).toBe(15);
  });

  it('rejects a carryPending that is not a boolean', () => {
    expect(
      () =>
        new TokenCarrier({
          tokens: codec,
          logger: false,
          carryPending: 'yes' as unknown as boolean,
        }),
    ).toThrow(/carryPending must be true or false/);
  });
});
