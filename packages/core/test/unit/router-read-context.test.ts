import { afterEach, describe, expect, it } from 'vitest';
import { Session } from '../../src/index.js';
import { cp } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

describe('ReadContext.required: the position an adapter may ask its server to enforce', () => {
  it('is the session position on covered reads', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.setAll({ applied: cp('1.12') });
      },
    });
    await f.read(sessionAt('1.12'));
    expect(f.adapter.calls.reads.map((r) => r.required)).toEqual([cp('1.12')]);
  });

  it('is undefined without a token', async () => {
    const f = await routerFixture();
    await f.read(new Session());
    expect(f.adapter.calls.reads).toHaveLength(1);
    expect(f.adapter.calls.reads[0]?.required).toBeUndefined();
  });

  it('is undefined for a read labelled stale, which must not block on the position', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 }, fallback: { enabled: false }, degraded: 'stale' },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.stale).toBe(true);
    expect(f.adapter.calls.reads[0]?.required).toBeUndefined();
  });

  it('is undefined when an impossible position was ignored by policy', async () => {
    const f = await routerFixture({ router: { badToken: 'ignore' } });
    const { decision } = await f.read(sessionAt('1.50'));
    expect(decision.reason).toBe('bad-token-ignored');
    expect(f.adapter.calls.reads[0]?.required).toBeUndefined();
  });
});

describe('ReadContext.observe: the position asked with the read only where it is free and needed', () => {
  const freeWithRead = (a: { observesWithRead?: boolean }) => {
    a.observesWithRead = true;
  };

  it("is true on replica reads with settle: 'immediate' and an adapter that observes with the read", async () => {
    const f = await routerFixture({
      router: { settle: 'immediate' },
      configure: (a) => freeWithRead(a as { observesWithRead?: boolean }),
    });
    const session = new Session();
    await f.read(session);
    expect(f.adapter.calls.reads.map((r) => r.observe)).toEqual([true]);
    // Settled from what the read returned: no probe, nothing pending.
    expect(session.unsettled).toBe(false);
    expect(f.adapter.calls.observes).toHaveLength(0);
  });

  it('is false with deferred settling (the default), even when the adapter could', async () => {
    const f = await routerFixture({
      configure: (a) => freeWithRead(a as { observesWithRead?: boolean }),
    });
    await f.read(new Session());
    expect(f.adapter.calls.reads.map((r) => r.observe)).toEqual([false]);
  });

  it("is false with settle: 'immediate' when observing would cost the adapter a round trip", async () => {
    const f = await routerFixture({ router: { settle: 'immediate' } });
    await f.read(new Session());
    expect(f.adapter.calls.reads.map((r) => r.observe)).toEqual([false]);
  });

  it('is false for a read with company on its replica: one shared probe settles them all', async () => {
    const f = await routerFixture({
      replicas: ['r1'],
      router: { settle: 'immediate' },
      configure: (a) => freeWithRead(a as { observesWithRead?: boolean }),
    });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = new Session();
    const second = new Session();
    const firstRead = f.clock.run(
      f.router.read(first, async () => {
        await held;
        return 'first';
      }),
    );
    // The first read is in flight on r1 when the second one starts there.
    await f.clock.run(f.router.read(second, async () => 'second'));
    release();
    await firstRead;
    expect(f.adapter.calls.reads.map((r) => [r.target, r.observe])).toEqual([
      ['r1', true],
      ['r1', false],
    ]);
    // Both settled before they returned: the first from its own read, the second from a probe.
    expect(first.unsettled).toBe(false);
    expect(second.unsettled).toBe(false);
    // Alone again: the next read asks for the position with the read.
    await f.read(new Session());
    expect(f.adapter.calls.reads.at(-1)?.observe).toBe(true);
  });

  it('is false on the primary', async () => {
    const f = await routerFixture({
      router: { settle: 'immediate' },
      configure: (a) => {
        freeWithRead(a as { observesWithRead?: boolean });
        a.setAll({ reachable: false });
      },
    });
    await f.read(new Session()).catch(() => undefined);
    const primaryReads = f.adapter.calls.reads.filter((r) => r.target === 'primary');
    expect(primaryReads.length).toBeGreaterThan(0);
    expect(primaryReads.every((r) => r.observe === false)).toBe(true);
  });
});
