import { afterEach, describe, expect, it } from 'vitest';
import { HistoryUnverifiedError } from '../../src/index.js';
import { cp } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

// Telemetry bridges build operation durations and error outcomes from these two payloads alone.
describe('read timing in events', () => {
  it('decision carries the whole read duration, waits included', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    const durations: number[] = [];
    f.router.events.on('decision', (e) => durations.push(e.durationMs));
    f.clock.at(20, () => {
      f.adapter.replica('r1').applied = cp('1.12');
    });
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.reason).toBe('replica-waited');
    expect(durations).toHaveLength(1);
    expect(durations[0]).toBeGreaterThanOrEqual(decision.waitedMs);
    expect(durations[0]).toBeGreaterThanOrEqual(20);
  });

  it('a read that throws emits read-error with its duration and no decision', async () => {
    const f = await routerFixture();
    f.adapter.primary.reachable = false;
    const errors: Array<{ error: unknown; durationMs: number; cluster: string }> = [];
    f.router.events.on('read-error', (e) => errors.push(e));
    const error = await f.read(sessionAt('1.12')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HistoryUnverifiedError);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBe(error);
    expect(errors[0]!.cluster).toBe('default');
    expect(errors[0]!.durationMs).toBeGreaterThan(0);
    expect(f.events.decision).toEqual([]);
  });

  it('a successful read emits no read-error', async () => {
    const f = await routerFixture();
    const errors: unknown[] = [];
    f.router.events.on('read-error', (e) => errors.push(e));
    const { decision } = await f.read(sessionAt('1.1'));
    expect(decision.target).not.toBe('primary');
    expect(errors).toEqual([]);
  });
});
