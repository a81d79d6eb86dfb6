import { afterEach, describe, expect, it } from 'vitest';
import { balanced, type SelectionPolicy, Session, TokenCodec } from '../../src/index.js';
import { cp } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture } from './helpers/router-fixture.js';

afterEach(closeFixtures);

const codec = new TokenCodec();
/** As the next request does: encode with the reads carried, decode into a new session. */
const nextRequest = (session: Session) =>
  Session.fromToken(codec.decode(codec.encode(session.toTokenData({ carryPending: true }))));

describe('pending reads carried in the token to the next request', () => {
  it('the token names the node; the next request reads it again without any probe', async () => {
    const f = await routerFixture({ router: { selection: 'round-robin' } });
    f.adapter.setAll({ observed: null });
    const session = new Session();
    const read = await f.read(session);
    const data = session.toTokenData({ carryPending: true });
    expect(data.pending).toEqual({ default: [read.decision.target] });
    const probes = f.adapter.calls.probes.length;
    const next = nextRequest(session);
    expect(next.unsettled).toBe(true);
    const again = await f.read(next);
    expect(again.decision.target).toBe(read.decision.target);
    expect(f.adapter.calls.probes.length).toBe(probes);
    // Still pending, carried on again.
    expect(nextRequest(next).pendingTargets('default')).toEqual([read.decision.target]);
  });

  it('a next read elsewhere first settles with a probe sent after the request began', async () => {
    const f = await routerFixture({ router: { selection: 'round-robin' } });
    f.adapter.setAll({ observed: null, applied: cp('1.15') });
    const session = new Session();
    const read = await f.read(session);
    const next = nextRequest(session);
    // The replica read is paused now: staying would pin the session to a state that no longer
    // moves, so the next request settles first (then any replica covering 1.15 may serve).
    f.adapter.replica(read.decision.target).paused = true;
    await f.clock.run(f.router.monitor.refresh(read.decision.target));
    const began = f.clock.now();
    await f.read(next);
    const probe = f.adapter.calls.probes.filter((p) => p.target === read.decision.target).at(-1)!;
    expect(probe.at).toBeGreaterThanOrEqual(began);
    expect(next.positionText('default')).toBe('1.15');
  });

  it('a node this router does not know settles from the primary (errs toward fresh)', async () => {
    const f = await routerFixture();
    f.adapter.setAll({ observed: null });
    f.adapter.primary.position = cp('1.20');
    const next = Session.fromToken({ positions: {}, pending: { default: ['gone'] }, issuedAt: 0 });
    await f.read(next);
    await f.clock.run(next.settled());
    expect(next.positionText('default')).toBe('1.20');
  });

  it('writes are never carried: the token waits for their settlement', async () => {
    const f = await routerFixture();
    const session = new Session();
    await f.router.write(session, async () => 'ok', { capture: false, transaction: false });
    if (session.unsettled) {
      expect(() => session.toTokenData({ carryPending: true })).toThrow(
        expect.objectContaining({ code: 'TIDEMARK_UNSETTLED' }),
      );
      await f.clock.run(session.settledWrites());
    }
    expect(session.toTokenData({ carryPending: true }).pending).toBeUndefined();
  });

  /**
   * A session's write (1.11) is not on the replicas yet and the router never waits, so its read
   * runs on the primary; the request ends with `endRequest`; another session then writes 1.12
   * and the replicas apply 1.11 only. Where does the session's next read go?
   */
  async function afterPrimaryRead() {
    const f = await routerFixture({ router: { wait: { budgetMs: 0 } } });
    f.adapter.setAll({ observed: null });
    f.adapter.primary.observed = null;
    const session = new Session();
    await f.router.write(session, async () => 'ok', { transaction: false });
    await f.clock.run(session.settledWrites());
    expect((await f.read(session)).decision.target).toBe('primary');
    return { f, session };
  }

  async function nextReadAfterPrimaryRead(endRequest: (session: Session) => Promise<void>) {
    const { f, session } = await afterPrimaryRead();
    await f.clock.run(endRequest(session));
    const data = session.toTokenData({ carryPending: true });
    await f.router.write(new Session(), async () => 'ok', { transaction: false });
    f.adapter.setAll({ applied: cp('1.11') });
    for (const id of ['r1', 'r2']) await f.clock.run(f.router.monitor.refresh(id));
    const next = Session.fromToken(codec.decode(codec.encode(data)));
    return { data, decision: (await f.read(next)).decision };
  }

  it('a primary read is settled before the token goes out, so the next read can leave the primary', async () => {
    const { data, decision } = await nextReadAfterPrimaryRead((s) => s.settledForCarrying());
    expect(data).toMatchObject({ positions: { default: '1.11' } });
    expect(data.pending).toBeUndefined();
    expect(decision.reason).toBe('replica-covered');
  });

  it('control: carried, the primary read settles at the next request to 1.12 and stays on the primary', async () => {
    const { data, decision } = await nextReadAfterPrimaryRead((s) => s.settledWrites());
    expect(data.pending).toEqual({ default: ['primary'] });
    expect(decision.target).toBe('primary');
  });

  it('a primary that does not answer leaves its read carried, without an error', async () => {
    const { f, session } = await afterPrimaryRead();
    f.adapter.primary.reachable = false;
    await f.clock.run(session.settledForCarrying());
    expect(session.toTokenData({ carryPending: true })).toMatchObject({
      positions: { default: '1.11' },
      pending: { default: ['primary'] },
    });
  });

  it('a carried position a router never bound does not settle silently', async () => {
    const next = Session.fromToken({ positions: {}, pending: { other: ['r1'] }, issuedAt: 0 });
    await expect(next.settled()).rejects.toMatchObject({ code: 'TIDEMARK_UNSETTLED' });
    expect(() => next.toTokenData()).toThrow(
      expect.objectContaining({ code: 'TIDEMARK_UNSETTLED' }),
    );
    expect(next.toTokenData({ carryPending: true }).pending).toEqual({ other: ['r1'] });
  });
});

describe('handing a session to another process', () => {
  it('settles what a router here can, carries the reads it cannot', async () => {
    const f = await routerFixture();
    f.adapter.setAll({ observed: null, applied: cp('1.15') });
    const session = Session.fromToken({
      positions: {},
      pending: { elsewhere: ['r9'] },
      issuedAt: 0,
    });
    await f.read(session);
    const data = await f.clock.run(session.handOffTokenData());
    expect(data.positions).toEqual({ default: '1.15' });
    expect(data.pending).toEqual({ elsewhere: ['r9'] });
  });
});

describe('pending entries in tokens and token data', () => {
  it('round-trip, signed, next to positions and alone', () => {
    const signed = new TokenCodec({ keys: [{ id: 'k', secret: 'x'.repeat(32) }] });
    const data = { positions: { a: '1.2' }, pending: { a: ['r1', 'primary'], b: ['r-2_x'] } };
    const back = signed.decode(signed.encode(data));
    expect(back.positions).toEqual({ a: '1.2' });
    expect(back.pending).toEqual({ a: ['primary', 'r1'], b: ['r-2_x'] });
    expect(codec.decode(codec.encode({ positions: { a: '1.2' } })).pending).toBeUndefined();
  });

  it('rejects hostile pending fields with typed errors', () => {
    const body = (tail: string) => `tm1~0~a~1.2~${tail}`;
    for (const [text, code] of [
      [body('.a~r1.r1'), 'TIDEMARK_TOKEN_MALFORMED'],
      [body('.a~r1~.a~r2'), 'TIDEMARK_TOKEN_MALFORMED'],
      [body('.~r1'), 'TIDEMARK_TOKEN_MALFORMED'],
      [body('.a~'), 'TIDEMARK_TOKEN_MALFORMED'],
      [body('.a~r1..r2'), 'TIDEMARK_TOKEN_MALFORMED'],
      [
        body(`.a~${Array.from({ length: 9 }, (_, i) => `n${i}`).join('.')}`),
        'TIDEMARK_TOKEN_TOO_LARGE',
      ],
    ] as const) {
      expect(() => codec.decode(text), text).toThrow(expect.objectContaining({ code }));
    }
    const small = new TokenCodec({ maxClusters: 1 });
    expect(() => small.decode(body('.b~r1'))).toThrow(
      expect.objectContaining({ code: 'TIDEMARK_TOKEN_TOO_LARGE' }),
    );
    expect(() => small.encode({ positions: { a: '1' }, pending: { b: ['r1'] } })).toThrow(
      expect.objectContaining({ code: 'TIDEMARK_TOKEN_TOO_LARGE' }),
    );
    expect(() => codec.encode({ positions: {}, pending: { a: ['bad.id'] } })).toThrow(
      expect.objectContaining({ code: 'TIDEMARK_POSITION_INVALID' }),
    );
  });

  it('Session.fromToken checks the pending shape', () => {
    for (const pending of [
      [],
      'r1',
      { a: 'r1' },
      { a: [1] },
      { a: ['bad id'] },
      { 'bad name': ['r1'] },
    ]) {
      expect(() => Session.fromToken({ positions: {}, pending, issuedAt: 0 } as never)).toThrow(
        expect.objectContaining({ code: 'TIDEMARK_TOKEN_MALFORMED' }),
      );
    }
  });
});

describe('carried reads and an even spread of reads', () => {
  /**
   * 20 users whose tokens all carry a read on r1, each request carrying its read on to the
   * next: r1's share of the reads in each half, and the settling probes the router sent.
   */
  async function spread(selection: SelectionPolicy | 'balanced') {
    const f = await routerFixture({ router: { selection } });
    f.adapter.setAll({ observed: null });
    const users = Array.from({ length: 20 }, () =>
      Session.fromToken({ positions: {}, pending: { default: ['r1'] }, issuedAt: 0 }),
    );
    const probes = f.adapter.calls.probes.length;
    const onR1 = [0, 0];
    const reads = 600;
    let halfway = 0;
    for (let i = 0; i < reads; i++) {
      const session = users[i % users.length]!;
      const { decision } = await f.read(session);
      users[i % users.length] = nextRequest(session);
      if (decision.target === 'r1') onR1[i < reads / 2 ? 0 : 1]!++;
      if (i === reads / 2 - 1) halfway = f.adapter.calls.probes.length;
    }
    return {
      first: onR1[0]! / (reads / 2),
      second: onR1[1]! / (reads / 2),
      probesPerRead: (f.adapter.calls.probes.length - probes) / reads,
      probesInSecondHalf: f.adapter.calls.probes.length - halfway,
    };
  }

  it('balanced: users leave a replica over its even share, and only as many as needed', async () => {
    const { first, second, probesPerRead, probesInSecondHalf } = await spread('balanced');
    expect(first).toBeLessThan(0.75);
    expect(second).toBeGreaterThan(0.4);
    expect(second).toBeLessThan(0.6);
    // Each move costs one settling probe: about 10 users have to move; once spread, they stay.
    expect(probesPerRead).toBeLessThan(0.07);
    expect(probesInSecondHalf).toBeLessThan(6);
  });

  it('control: a policy that does not promise an even spread keeps every user where it was', async () => {
    const even = balanced();
    const { first, second, probesPerRead } = await spread({ name: 'custom', select: even.select });
    expect(first).toBe(1);
    expect(second).toBe(1);
    expect(probesPerRead).toBe(0);
  });
});
