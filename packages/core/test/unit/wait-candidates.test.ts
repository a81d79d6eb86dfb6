/**
 * A server-side wait goes to the least lagged replica; the other candidates are watched through
 * the monitor's probes meanwhile, so a read does not fall back when the replica that looked best
 * stalls and another one catches up. The control is the replica that looked best: it never
 * applies the position, so a wait on it alone would spend the whole budget.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cp, cpText } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

describe('waiting on several candidates', () => {
  it('the least lagged replica stalls, another catches up after 30 ms: replica-waited there', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.setAll({ applied: cp('1.10') });
        a.replica('r1').lagSeconds = 0.1; // looks best, but stalls
        a.replica('r2').lagSeconds = 2;
      },
    });
    f.clock.at(30, () => {
      f.adapter.replica('r2').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision).toMatchObject({ target: 'r2', reason: 'replica-waited' });
    expect(decision.waitedMs).toBeLessThanOrEqual(32);
    // One server-side wait, on the replica that looked best.
    expect(f.adapter.calls.waits.map((w) => w.replica)).toEqual(['r1']);
    // The control: r1 never got the position.
    expect(cpText(f.adapter.replica('r1').applied)).toBe('1.10');
    expect(f.events.wait).toEqual([
      expect.objectContaining({ replica: 'r2', reached: true, serverSide: true }),
    ]);
  });

  it('the server-side wait still wins when the best replica is the one that catches up', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.setAll({ applied: cp('1.10') });
        a.replica('r1').lagSeconds = 0.1;
        a.replica('r2').lagSeconds = 2;
      },
    });
    f.clock.at(20, () => {
      f.adapter.replica('r1').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision).toMatchObject({ target: 'r1', reason: 'replica-waited', waitedMs: 20 });
  });
});
