import { afterEach, describe, expect, it } from 'vitest';
import type { PrimaryVerdict } from '../../src/adapter-kit/index.js';
import type { CounterPosition } from '../support/counter-codec.js';
import { cp, type ScriptedAdapter } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

/** Positions from 1.50 on stand for a node's own writes after it was promoted behind the app's back. */
const PROMOTED_OWN_WRITES = 50;

/**
 * A verdict as MariaDB's: one sequence number per domain, so the codec calls a promoted node's
 * newer writes `covered`, and only the verdict against the primary tells they are another history.
 */
function promotedNodeVerdict(a: ScriptedAdapter, judged: boolean): void {
  const adapter = a as ScriptedAdapter & {
    coveredNeedsVerdict?: boolean;
    classifyAgainstPrimary?: (
      primary: CounterPosition,
      required: CounterPosition,
    ) => PrimaryVerdict;
  };
  adapter.coveredNeedsVerdict = true;
  adapter.classifyAgainstPrimary = (_primary, required) =>
    judged && required.seq >= PROMOTED_OWN_WRITES ? 'other-history' : 'ok';
  a.primary.position = cp('1.12');
}

describe('a wait ends only on a replica on the primary history (invariant 9)', () => {
  for (const serverSideWait of [true, false]) {
    const how = serverSideWait ? 'server-side wait' : 'probes';
    it(`${how}: a node whose answer shows it left the primary history does not serve the read`, async () => {
      const f = await routerFixture({
        adapter: { serverSideWait },
        router: { wait: { pollIntervalMs: 10 } },
        configure: (a) => promotedNodeVerdict(a, true),
      });
      // r2 is promoted behind the app's back and writes past the session's position; it never
      // applied 1.11-1.12 (the session's write, lost with the old primary).
      f.clock.at(20, () => {
        f.adapter.replica('r2').applied = cp('1.60');
      });
      const { decision } = await f.read(sessionAt('1.12'));
      expect(decision.target).toBe('primary');
      expect(decision.reason).toBe('primary-fallback');
      expect(f.router.monitor.state('r2')?.history).toBe('diverged');
      expect(f.adapter.calls.reads.map((r) => r.target)).toEqual(['primary']);
      expect(f.events.wait.map((w) => w.reached)).toEqual([false]);
    });

    it(`${how}: control, the same answer judged on the primary history ends the wait there`, async () => {
      const f = await routerFixture({
        adapter: { serverSideWait },
        router: { wait: { pollIntervalMs: 10 } },
        configure: (a) => promotedNodeVerdict(a, false),
      });
      f.clock.at(20, () => {
        f.adapter.replica('r2').applied = cp('1.60');
      });
      const { decision } = await f.read(sessionAt('1.12'));
      expect(decision.target).toBe('r2');
      expect(decision.reason).toBe('replica-waited');
    });
  }
});
