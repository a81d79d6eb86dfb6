import { afterEach, describe, expect, it } from 'vitest';
import type { PrimaryVerdict } from '../../src/adapter-kit/index.js';
import type { CounterPosition } from '../support/counter-codec.js';
import { cp, type ScriptedAdapter } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

/** Positions from 1.50 on stand for a node's own writes after it was promoted behind the app's back. */
const PROMOTED_OWN_WRITES = 50;

/**
 * A verdict as MariaDB's: one sequence number per domain, so the codec calls a newer position
 * `covered`, and only the adapter's verdict against the primary (`lost`) tells another history.
 */
function verdictLike(
  a: ScriptedAdapter,
  options: { coveredNeedsVerdict: boolean; primary: string; lost: (seq: number) => boolean },
): void {
  const adapter = a as ScriptedAdapter & {
    coveredNeedsVerdict?: boolean;
    classifyAgainstPrimary?: (
      primary: CounterPosition,
      required: CounterPosition,
    ) => PrimaryVerdict;
  };
  adapter.coveredNeedsVerdict = options.coveredNeedsVerdict;
  adapter.classifyAgainstPrimary = (_primary, required) =>
    options.lost(required.seq) ? 'other-history' : 'ok';
  a.primary.position = cp(options.primary);
}

/** A node promoted behind the app's back: its own writes (from 1.50 on) are another history. */
function promotedNodeVerdict(a: ScriptedAdapter, judged: boolean): void {
  verdictLike(a, {
    coveredNeedsVerdict: true,
    primary: '1.12',
    lost: (seq) => judged && seq >= PROMOTED_OWN_WRITES,
  });
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

describe('a write after a failover where the new primary numbers past the lost write (MariaDB)', () => {
  /** 1.12 was lost with the old primary; the new one's own numbering has passed it. */
  function numberedPast(a: ScriptedAdapter, coveredNeedsVerdict: boolean): void {
    verdictLike(a, { coveredNeedsVerdict, primary: '1.20', lost: (seq) => seq === 12 });
  }

  it('asks the verdict although the write "covers" the held position, and reports the loss', async () => {
    const f = await routerFixture({ configure: (a) => numberedPast(a, true) });
    const probes = f.adapter.calls.probes.length;
    const session = sessionAt('1.12');
    const { lostWrite } = await f.clock.run(f.router.writeDetailed(session, async () => 'ok'));
    expect(lostWrite).toEqual({ cluster: 'default', position: '1.12', verdict: 'other-history' });
    expect(f.router.metrics().lostWrites).toBe(1);
    // A position that is not lost still costs no primary probe (the verdict is synchronous).
    const kept = sessionAt('1.15');
    const second = await f.clock.run(f.router.writeDetailed(kept, async () => 'ok'));
    expect(second.lostWrite).toBeUndefined();
    expect(f.adapter.calls.probes.slice(probes).filter((p) => p.target === 'primary')).toHaveLength(
      1,
    );
  });

  it('control: trusting `covered` merges the lost position away without a word', async () => {
    const f = await routerFixture({ configure: (a) => numberedPast(a, false) });
    const session = sessionAt('1.12');
    const { lostWrite } = await f.clock.run(f.router.writeDetailed(session, async () => 'ok'));
    expect(lostWrite).toBeUndefined();
    expect(f.router.metrics().lostWrites).toBe(0);
  });
});
