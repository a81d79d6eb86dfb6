/**
 * `router.acquire(session, 'read' | 'write')`: leases on the replication simulator. Each safety
 * property is shown next to a control that exhibits the anomaly the lease prevents (a naive
 * replica read that ignores the session's position, a lease that was not released, ...).
 */
import { describe, expect, it } from 'vitest';
import {
  ErrorCode,
  type Lease,
  LeaseError,
  PRIMARY,
  Router,
  type RouterOptions,
  Session,
} from '../../src/index.js';
import type { CounterPosition } from '../support/counter-codec.js';
import {
  ReplicationSimulator,
  type SimConnection,
  SimulatedAdapter,
  type SimulatedAdapterOptions,
  SimulatedPollingMonitor,
} from '../support/simulator.js';

type SimRouter = Router<CounterPosition, SimConnection>;

/**
 * A primary, r0 (no lag) and r1 (paused: it never applies anything new), a router over them, and
 * `run`, which drives the simulation around `body` with the router ready and closes it after.
 */
function fixture(
  options: {
    router?: Partial<RouterOptions<CounterPosition, SimConnection>>;
    adapter?: SimulatedAdapterOptions;
    pauseAll?: boolean;
    monitorIntervalMs?: number;
  } = {},
) {
  const sim = new ReplicationSimulator({ replicas: [{ id: 'r0' }, { id: 'r1' }] });
  const adapter = new SimulatedAdapter(sim, options.adapter);
  const router: SimRouter = new Router<CounterPosition, SimConnection>({
    adapter,
    clock: sim.clock,
    monitor: SimulatedPollingMonitor.of(adapter, options.monitorIntervalMs ?? 10),
    ...options.router,
  });
  const revoked: Array<{ kind: string; reason: string; target: string }> = [];
  router.events.on('lease-revoked', ({ kind, reason, target }) =>
    revoked.push({ kind, reason, target }),
  );
  const run = <T>(body: () => Promise<T>): Promise<T> =>
    sim.run(async () => {
      await router.ready();
      sim.pause('r1');
      if (options.pauseAll) sim.pause('r0');
      try {
        return await body();
      } finally {
        await router.close();
      }
    });
  /** A read sent straight to a replica, no token: what a naive replica router does. */
  const naiveSees = async (replica: string, writeId: string) =>
    (await adapter.read(replica, async (c) => c.sees(writeId), {})).value;
  return { sim, adapter, router, revoked, run, naiveSees };
}

/** Write `writeId` through a write lease and release it. */
async function leasedWrite(router: SimRouter, session: Session, writeId: string): Promise<void> {
  const lease = await router.acquire(session, 'write');
  lease.connection.insert(writeId);
  await lease.release();
}

const seqOf = (router: SimRouter, session: Session) =>
  session.position(router.cluster, router.codec)?.seq;

const leaseError = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LeaseError);
  return error as LeaseError;
};

describe('router.acquire: write leases', () => {
  it("release() captures the commit's position into the session", async () => {
    const f = fixture();
    await f.run(async () => {
      const session = new Session();
      const lease = await f.router.acquire(session, 'write');
      expect(lease).toMatchObject({
        kind: 'write',
        target: PRIMARY,
        reason: 'write',
        stale: false,
      });
      lease.connection.insert('w1');
      // Nothing is committed, nor recorded, while the lease is held.
      expect(f.sim.seqOfWrite('w1')).toBeUndefined();
      expect(seqOf(f.router, session)).toBeUndefined();
      await lease.release();
      expect(lease.state).toBe('released');
      expect(f.sim.seqOfWrite('w1')).toBe(1);
      expect(seqOf(f.router, session)).toBe(1);
      expect(f.router.metrics().writes).toBe(1);
    });
  });

  it('a read lease after a write lease goes to a replica that has the write; a naive read of the other replica misses it', async () => {
    const f = fixture();
    await f.run(async () => {
      const session = new Session();
      await leasedWrite(f.router, session, 'w1');
      const read = await f.router.acquire(session, 'read');
      expect(read.target).toBe('r0');
      expect(['replica-covered', 'replica-waited']).toContain(read.reason);
      expect(read.connection.sees('w1')).toBe(true);
      await read.release();
      // Control: r1 is paused; a read that ignores the token lands there half the time and misses.
      expect(await f.naiveSees('r1', 'w1')).toBe(false);
    });
  });

  it('with every replica paused the read lease falls back to the primary (the same ladder as router.read)', async () => {
    const f = fixture({ pauseAll: true });
    await f.run(async () => {
      const session = new Session();
      await leasedWrite(f.router, session, 'w1');
      const read = await f.router.acquire(session, 'read');
      expect(read.target).toBe(PRIMARY);
      expect(read.connection.sees('w1')).toBe(true);
      // The primary fallback runs read-only, as router.read's does (invariant 7).
      expect(() => read.connection.insert('nope')).toThrow(/read-only/);
      await read.release();
      const viaRead = await f.router.readDetailed(session, async (c) => c.sees('w1'));
      expect(viaRead.decision.reason).toBe(read.reason);
      expect(viaRead.decision.target).toBe(read.target);
      expect(f.router.metrics().byReason['primary-fallback']).toBe(2);
      // Controls: neither replica has the write.
      expect(await f.naiveSees('r0', 'w1')).toBe(false);
      expect(await f.naiveSees('r1', 'w1')).toBe(false);
    });
  });

  it('release(error) rolls back and records nothing: the token keeps covering the earlier write', async () => {
    const f = fixture({ pauseAll: true });
    await f.run(async () => {
      const session = new Session();
      await leasedWrite(f.router, session, 'w1');
      const before = session.position(f.router.cluster, f.router.codec);
      const failing = await f.router.acquire(session, 'write');
      failing.connection.insert('w2');
      // The error is not re-thrown: the caller already has it.
      await failing.release(new Error('the app failed after the insert'));
      expect(f.sim.seqOfWrite('w2')).toBeUndefined();
      expect(session.position(f.router.cluster, f.router.codec)).toEqual(before);
      expect(f.router.metrics().writes).toBe(1);
      // The session still reads w1 back (from the primary: the replicas are paused) ...
      const read = await f.router.acquire(session, 'read');
      expect(read.connection.sees('w1')).toBe(true);
      await read.release();
      // ... which a naive replica read does not.
      expect(await f.naiveSees('r0', 'w1')).toBe(false);
    });
  });

  it('release() rejects when the commit fails, and nothing is recorded', async () => {
    const f = fixture();
    await f.run(async () => {
      const session = new Session();
      const original = f.adapter.write.bind(f.adapter);
      f.adapter.write = async (fn, options) => {
        await original(fn, options);
        throw new Error('connection lost at COMMIT');
      };
      const lease = await f.router.acquire(session, 'write');
      await expect(lease.release()).rejects.toThrow(/COMMIT/);
      expect(seqOf(f.router, session)).toBeUndefined();
    });
  });
});

describe('router.acquire: misuse and revocation', () => {
  it('the connection throws TIDEMARK_LEASE_RELEASED after release; a second release is a no-op', async () => {
    const f = fixture();
    await f.run(async () => {
      const session = new Session();
      for (const kind of ['read', 'write'] as const) {
        const lease = await f.router.acquire(session, kind);
        const sees = lease.connection.sees;
        // Control: while held, the connection works (also through a method taken off it).
        expect(sees('w0')).toBe(false);
        expect(lease.connection.node).toBe(lease.target);
        const first = lease.release();
        expect(lease.release()).toBe(first);
        await first;
        expect(() => lease.connection.node).toThrow(LeaseError);
        expect(() => sees('w0')).toThrow(
          expect.objectContaining({ code: ErrorCode.LeaseReleased }),
        );
        expect(() => lease.connection.sees('w0')).toThrow(/used after release/);
        await lease.release();
      }
      // The released connection is not `then`-able by accident: awaiting it does not throw.
      const lease = await f.router.acquire(session, 'read');
      await lease.release();
      await expect(Promise.resolve(lease.connection)).resolves.toBeDefined();
    });
  });

  it('maxHoldMs revokes a lease held too long: rolled back, event, counter, typed errors', async () => {
    const f = fixture();
    await f.run(async () => {
      const session = new Session();
      // Control: held as long, but without a limit, the write commits and is recorded.
      const unlimited = await f.router.acquire(session, 'write');
      unlimited.connection.insert('w1');
      await f.sim.clock.sleep(200);
      await unlimited.release();
      expect(f.sim.seqOfWrite('w1')).toBe(1);
      expect(seqOf(f.router, session)).toBe(1);

      const lease = await f.router.acquire(session, 'write', { maxHoldMs: 100 });
      lease.connection.insert('w2');
      await f.sim.clock.sleep(99);
      expect(lease.state).toBe('held');
      await f.sim.clock.sleep(2);
      expect(lease.state).toBe('revoked');
      expect(f.revoked).toEqual([{ kind: 'write', reason: 'max-hold', target: PRIMARY }]);
      expect(f.router.metrics().leasesRevoked).toBe(1);
      expect(() => lease.connection.insert('w3')).toThrow(
        expect.objectContaining({ code: ErrorCode.LeaseRevoked }),
      );
      const error = await leaseError(lease.release());
      expect(error.code).toBe(ErrorCode.LeaseRevoked);
      expect(error.message).toMatch(/maxHoldMs \(100 ms\).*rolled back.*raise maxHoldMs/);
      expect(f.sim.seqOfWrite('w2')).toBeUndefined();
      expect(seqOf(f.router, session)).toBe(1);
    });
  });

  it('close() revokes outstanding leases before closing the adapter; acquire then throws', async () => {
    const f = fixture();
    const closeOrder: string[] = [];
    const session = new Session();
    let leases: Array<Lease<SimConnection>> = [];
    await f.sim.run(async () => {
      await f.router.ready();
      const originalClose = f.adapter.close.bind(f.adapter);
      f.adapter.close = async () => {
        closeOrder.push(
          `adapter closed with ${leases.filter((l) => l.state === 'held').length} held`,
        );
        await originalClose();
      };
      leases = [await f.router.acquire(session, 'write'), await f.router.acquire(session, 'read')];
      leases[0]!.connection.insert('w1');
      await f.router.close();
    });
    expect(closeOrder).toEqual(['adapter closed with 0 held']);
    expect(leases.map((l) => l.state)).toEqual(['revoked', 'revoked']);
    expect(f.revoked.map((r) => `${r.kind}:${r.reason}`)).toEqual(['write:closed', 'read:closed']);
    expect(f.router.metrics().leasesRevoked).toBe(2);
    for (const lease of leases) {
      expect((await leaseError(lease.release())).message).toMatch(/router was closed/);
    }
    expect(f.sim.seqOfWrite('w1')).toBeUndefined();
    await expect(f.router.acquire(session, 'read')).rejects.toMatchObject({
      code: ErrorCode.Closed,
    });
  });

  it('close() while a connection is on its way: acquire rejects with TIDEMARK_CLOSED, the connection goes back', async () => {
    const f = fixture({ adapter: { readLatencyMs: 100 } });
    const outcome = await f.sim.run(async () => {
      await f.router.ready();
      const pending = f.router.acquire(new Session(), 'read').then(
        () => 'granted',
        (e: unknown) => (e as { code?: string }).code,
      );
      await f.sim.clock.sleep(50);
      await f.router.close();
      return pending;
    });
    expect(outcome).toBe(ErrorCode.Closed);
    // Handed over after close, given straight back (the callback failed), never counted as held.
    expect(f.adapter.stats.failedReads).toBe(1);
    expect(f.router.metrics().leasesRevoked).toBe(0);
  });

  it("an aborted signal: before the grant acquire rejects with the signal's reason; while held it revokes", async () => {
    const f = fixture({ adapter: { readLatencyMs: 100 } });
    await f.run(async () => {
      const session = new Session();
      const pre = new AbortController();
      pre.abort(new Error('client went away'));
      await expect(f.router.acquire(session, 'write', { signal: pre.signal })).rejects.toThrow(
        'client went away',
      );
      expect(f.adapter.stats.writes).toBe(0);

      // Aborted while the adapter is still connecting (100 ms): no retry on another replica.
      const connecting = new AbortController();
      void f.sim.clock.sleep(50).then(() => connecting.abort(new Error('gave up')));
      const replicaReads = f.adapter.stats.replicaReads;
      await expect(
        f.router.acquire(session, 'read', { signal: connecting.signal }),
      ).rejects.toThrow('gave up');
      expect(f.adapter.stats.replicaReads + f.adapter.stats.primaryReadStarts.length).toBe(
        replicaReads + 1,
      );
      expect(f.router.metrics().retries).toBe(0);

      // Control: the same read, not aborted, is granted after the 100 ms.
      const plain = await f.router.acquire(session, 'read');
      await plain.release();

      const held = new AbortController();
      const lease = await f.router.acquire(session, 'write', { signal: held.signal });
      lease.connection.insert('w1');
      held.abort();
      expect(lease.state).toBe('revoked');
      expect((await leaseError(lease.release())).message).toMatch(/signal aborted/);
      expect(f.revoked).toEqual([{ kind: 'write', reason: 'aborted', target: PRIMARY }]);
      expect(f.sim.seqOfWrite('w1')).toBeUndefined();
    });
  });

  it('a read lease with transaction: true is refused with TIDEMARK_TRANSACTION_ON_REPLICA', async () => {
    const f = fixture();
    await f.run(async () => {
      const session = new Session();
      const error = await leaseError(f.router.acquire(session, 'read', { transaction: true }));
      expect(error.code).toBe(ErrorCode.TransactionOnReplica);
      expect(error.message).toMatch(/Acquire a 'write' lease/);
      expect(f.adapter.stats.replicaReads).toBe(0);
      // Control: a write lease runs the transaction.
      const lease = await f.router.acquire(session, 'write', { transaction: true });
      lease.connection.insert('w1');
      await lease.release();
      expect(f.sim.seqOfWrite('w1')).toBe(1);
      await expect(f.router.acquire(session, 'read', { maxHoldMs: -1 })).rejects.toMatchObject({
        code: ErrorCode.Config,
      });
      await expect(f.router.acquire(session, 'scan' as 'read')).rejects.toThrow(
        /acquire takes 'read' or 'write'/,
      );
    });
  });
});

describe('router.acquire: read leases', () => {
  it('release() raises the session to what the read observed (monotonic reads)', async () => {
    const f = fixture();
    await f.run(async () => {
      // Another session writes; this one reads it on r0, then must never be sent to paused r1.
      await leasedWrite(f.router, new Session(), 'w1');
      await f.sim.clock.sleep(20);
      const session = new Session();
      const read = async () => {
        const lease = await f.router.acquire(session, 'read');
        const seen = `${lease.target}:${lease.connection.sees('w1')}`;
        await lease.release();
        return seen;
      };
      // Without a position the session may read either replica; once it has read w1 on r0 ...
      let first = await read();
      for (let tries = 0; first !== 'r0:true' && tries < 50; tries++) first = await read();
      expect(first).toBe('r0:true');
      expect(seqOf(f.router, session)).toBe(1);
      // ... it never goes back in time to paused r1.
      const after: string[] = [];
      for (let round = 0; round < 10; round++) after.push(await read());
      expect(new Set(after)).toEqual(new Set(['r0:true']));
      // Control: a read that ignores the session's position may land on r1, back before w1.
      expect(await f.naiveSees('r1', 'w1')).toBe(false);
    });
  });

  it('release(error) records nothing and reports a read-error', async () => {
    const f = fixture();
    const errors: unknown[] = [];
    f.router.events.on('read-error', ({ error }) => errors.push(error));
    await f.run(async () => {
      await leasedWrite(f.router, new Session(), 'w1');
      await f.sim.clock.sleep(20);
      const session = new Session();
      const lease = await f.router.acquire(session, 'read');
      const failure = new Error('query failed');
      await lease.release(failure);
      expect(errors).toEqual([failure]);
      expect(seqOf(f.router, session)).toBeUndefined();
      expect(f.router.metrics().reads).toBe(0);
    });
  });

  it('handle.acquire(kind) leases for the handle: its token then carries the write', async () => {
    const f = fixture({ pauseAll: true });
    await f.run(async () => {
      const handle = f.router.withSession();
      const lease = await handle.acquire('write');
      lease.connection.insert('w1');
      await lease.release();
      const next = f.router.withSession(await handle.token());
      const read = await next.acquire('read');
      expect(read.target).toBe(PRIMARY);
      expect(read.connection.sees('w1')).toBe(true);
      await read.release();
      // Control: without the token, a read lease goes to a replica and misses the write.
      const blind = await f.router.withSession().acquire('read');
      expect(blind.target).not.toBe(PRIMARY);
      expect(blind.connection.sees('w1')).toBe(false);
      await blind.release();
    });
  });

  it('a target that cannot hand over a connection: routed once more elsewhere (retried), as router.read does', async () => {
    // The monitor polls rarely, so it still believes r0 is up when the lease asks it; least-lag
    // keeps configuration order on ties, so r0 is tried first.
    const f = fixture({
      monitorIntervalMs: 100_000,
      router: { health: { maxSampleAgeMs: 100_000 }, selection: 'least-lag' },
    });
    await f.run(async () => {
      f.sim.crash('r0');
      const leases: string[] = [];
      for (let round = 0; round < 3; round++) {
        const lease = await f.router.acquire(new Session(), 'read');
        leases.push(`${lease.target}:${lease.retried}`);
        await lease.release();
      }
      // The first went on to r1; the failure marked r0 down, so the others go to r1 at once.
      expect(leases).toEqual(['r1:true', 'r1:false', 'r1:false']);
      expect(f.router.metrics().retries).toBe(1);
      expect(f.adapter.stats.failedReads).toBe(1);
      // Control: the same read sent to r0 without the router fails.
      await expect(f.naiveSees('r0', 'w0')).rejects.toThrow(/down/);
    });
  });

  it('the replica goes down before the read finished: release() rejects with a retryable TIDEMARK_READ_FAILED', async () => {
    const f = fixture({ router: { selection: 'least-lag' } });
    await f.run(async () => {
      const session = new Session();
      const lease = await f.router.acquire(session, 'read');
      expect(lease.target).toBe('r0');
      lease.connection.lastApplied();
      f.sim.crash('r0'); // the simulated adapter drops the answer of a node that went down
      await expect(lease.release()).rejects.toMatchObject({
        code: ErrorCode.ReadFailed,
        retryable: true,
      });
      expect(session.clusters()).toEqual([]);
      expect(f.router.monitor.state('r0')?.reachable).toBe(false);
      // Control: router.read retries such a read elsewhere by itself (reads are idempotent).
      f.sim.restart('r0');
      await f.router.monitor.refresh();
      const original = f.adapter.read.bind(f.adapter);
      let first = true;
      f.adapter.read = async (target, fn, context) => {
        const outcome = original(target, fn, context);
        if (first && target === 'r0') f.sim.crash('r0');
        first = false;
        return outcome;
      };
      const read = await f.router.readDetailed(session, async (c) => c.node);
      expect(read.decision.retried).toBe(true);
    });
  });

  it('shadow mode: a read lease runs on the primary and leaves the session alone', async () => {
    const f = fixture({ router: { mode: 'shadow' } });
    await f.run(async () => {
      const session = new Session();
      const lease = await f.router.acquire(session, 'read');
      expect(lease).toMatchObject({ target: PRIMARY, reason: 'shadow', stale: false });
      await lease.release();
      expect(session.clusters()).toEqual([]);
      await f.router.shadowSettled();
      expect(f.router.shadowReport()?.reads).toBe(1);
    });
  });
});
