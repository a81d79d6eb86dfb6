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
