import { afterEach, describe, expect, it } from 'vitest';
import { Session } from '../../src/index.js';
import { cp, cpText } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

describe('monotonic reads', () => {
  it("raises the session to the position the read observed, not the monitor's older sample", async () => {
    const f = await routerFixture();
    // The replica applied more since the monitor sampled it at 1.10; the read sees 1.15.
    f.adapter.setAll({ applied: cp('1.15') });
    expect(cpText(f.router.monitor.state('r1')?.applied)).toBe('1.10');
    const session = new Session();
    const { decision } = await f.read(session);
    expect(session.positionText('default')).toBe('1.15');
    // The observation also moves the monitor's view of that replica forward.
    expect(cpText(f.router.monitor.state(decision.target)?.applied)).toBe('1.15');
  });

  it('without an observed position, settles from a probe of the node sent after the read', async () => {
    const f = await routerFixture();
    f.adapter.setAll({ applied: cp('1.15'), observed: null });
    const probesBefore = f.adapter.probeCount('r1');
    const session = new Session();
    const { decision } = await f.read(session);
    expect(decision.target).toBe('r1');
    // Deferred: nothing was probed yet, and the token cannot be taken before settling.
    expect(session.unsettled).toBe(true);
    expect(f.adapter.probeCount('r1')).toBe(probesBefore);
    expect(() => session.toTokenData()).toThrow(
      expect.objectContaining({ code: 'TIDEMARK_UNSETTLED' }),
    );
    await f.clock.run(session.settled());
    // Not the monitor's pre-read sample (1.10): a probe sent after the read.
    expect(session.positionText('default')).toBe('1.15');
    expect(f.adapter.probeCount('r1')).toBe(probesBefore + 1);
    const probe = f.adapter.calls.probes.at(-1)!;
    expect(probe.target).toBe('r1');
    expect(probe.at).toBeGreaterThanOrEqual(f.adapter.calls.reads.at(-1)!.at);
  });

  it("settle: 'immediate' settles before the read returns (the same shared probe)", async () => {
    const f = await routerFixture({ router: { settle: 'immediate' } });
    f.adapter.setAll({ applied: cp('1.15'), observed: null });
    const session = new Session();
    await f.read(session);
    expect(session.unsettled).toBe(false);
    expect(session.positionText('default')).toBe('1.15');
  });

  it('one probe settles many reads that finished before it was sent', async () => {
    const f = await routerFixture();
    f.adapter.setAll({ applied: cp('1.15'), observed: null });
    const sessions = Array.from({ length: 8 }, () => new Session());
    for (const session of sessions) await f.read(session);
    const probesBefore = f.adapter.calls.probes.length;
    await f.clock.run(Promise.all(sessions.map((s) => s.settled())));
    // Both replicas served reads (or one did): at most one probe per replica.
    expect(f.adapter.calls.probes.length - probesBefore).toBeLessThanOrEqual(2);
    expect(sessions.map((s) => s.positionText('default'))).toEqual(Array(8).fill('1.15'));
  });

  it('the next read on the same replica needs no settling; one elsewhere settles first', async () => {
    const f = await routerFixture({ router: { selection: 'round-robin' } });
    f.adapter.setAll({ observed: null });
    const session = new Session();
    const first = await f.read(session);
    const probes = f.adapter.calls.probes.length;
    const second = await f.read(session);
    // Stuck to the pending replica: monotonic by itself, no probe spent.
    expect(second.decision.target).toBe(first.decision.target);
    expect(f.adapter.calls.probes.length).toBe(probes);
    // That replica becomes unhealthy: the next read goes elsewhere and settles before routing.
    f.adapter.replica(first.decision.target).applied = cp('1.30');
    f.adapter.replica(first.decision.target).reachable = false;
    f.router.monitor.reportFailure(first.decision.target, new Error('down'));
    f.adapter.primary.position = cp('1.30');
    f.adapter.replica(first.decision.target === 'r1' ? 'r2' : 'r1').applied = cp('1.30');
    await f.clock.run(f.router.monitor.refresh(first.decision.target === 'r1' ? 'r2' : 'r1'));
    const third = await f.read(session);
    expect(third.decision.target).not.toBe(first.decision.target);
    // Settled to the primary (the pending replica did not answer), so the read needed 1.30.
    expect(session.positionText('default')).not.toBeUndefined();
  });

  it("when the post-read probe fails, raises to the primary's position (errs toward fresh)", async () => {
    const f = await routerFixture();
    f.adapter.setAll({ observed: null });
    f.adapter.primary.position = cp('1.20');
    const session = new Session();
    // The replica answers the read, then vanishes before the probe.
    const read = f.router.readDetailed(session, async (connection) => {
      f.adapter.replica(connection.target).reachable = false;
      return 'x';
    });
    const { decision } = await f.clock.run(read);
    expect(decision.target).toBe('r1');
    await f.clock.run(session.settled());
    expect(session.positionText('default')).toBe('1.20');
  });

  // Regression: raiseAfterRead calls adapter.probe/probePrimary directly, without the
  // monitor's probe timeout, and its AbortController is never aborted; a node that answers the
  // read and then hangs makes the read hang forever.
  it('a post-read probe that hangs does not hang the read', async () => {
    const f = await routerFixture({ router: { monitorOptions: { probeTimeoutMs: 50 } } });
    f.adapter.setAll({ observed: null });
    f.adapter.holdProbes('r1');
    f.adapter.holdProbes('r2');
    const session = new Session();
    await f.clock.run(f.router.readDetailed(session, async () => 'x'));
    const outcome = await f.clock.run(session.settled(), 600_000, 2_000).then(
      () => 'settled',
      (error: unknown) => String(error),
    );
    expect(outcome).toBe('settled');
  });

  it("a primary read raises the session and the monitor's primary position", async () => {
    const f = await routerFixture({ configure: (a) => a.setAll({ reachable: false }) });
    f.adapter.primary.position = cp('1.20');
    const session = new Session();
    const { decision } = await f.read(session);
    expect(decision.target).toBe('primary');
    expect(session.positionText('default')).toBe('1.20');
    expect(cpText(f.router.monitor.primaryPosition())).toBe('1.20');
  });

  it('never lowers the session: a stale read leaves the higher position in place', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 }, fallback: { enabled: false }, degraded: 'stale' },
      configure: (a) => {
        a.primary.position = cp('1.20');
      },
    });
    const session = sessionAt('1.20');
    const versionBefore = session.version;
    const { decision } = await f.read(session);
    expect(decision.stale).toBe(true);
    expect(session.positionText('default')).toBe('1.20');
    expect(session.version).toBe(versionBefore);
  });
});

describe('writes raise the session', () => {
  it('raises the session to the position captured after the commit', async () => {
    const f = await routerFixture();
    const session = new Session();
    let seenInsideWrite: string | undefined = 'not called';
    const value = await f.clock.run(
      f.router.write(
        session,
        async (connection) => {
          seenInsideWrite = session.positionText('default');
          expect(connection).toEqual({ target: 'primary', readOnly: false });
          return 'inserted';
        },
        { transaction: false },
      ),
    );
    expect(value).toBe('inserted');
    // Not raised before the commit, raised to the committed position after it.
    expect(seenInsideWrite).toBeUndefined();
    expect(session.positionText('default')).toBe('1.11');
    expect(session.version).toBe(1);
    expect(f.adapter.calls.writes.map((w) => w.options)).toEqual([{ transaction: false }]);
    expect(cpText(f.router.monitor.primaryPosition())).toBe('1.11');
    expect(f.events.write).toEqual([{ cluster: 'default', position: cp('1.11'), durationMs: 0 }]);
    expect(f.router.metrics().writes).toBe(1);
  });

  it('read-your-writes: the next read waits for a replica to apply the write', async () => {
    const f = await routerFixture();
    const session = new Session();
    await f.clock.run(f.router.write(session, async () => undefined));
    const primaryProbes = f.adapter.probeCount('primary');
    f.clock.at(15, () => {
      f.adapter.replica('r1').applied = cp('1.11');
    });
    const { decision } = await f.read(session);
    expect(decision).toMatchObject({ target: 'r1', reason: 'replica-waited', waitedMs: 15 });
    // The write told the monitor where the primary is: no extra primary probe was needed.
    expect(f.adapter.probeCount('primary')).toBe(primaryProbes);
  });
});
