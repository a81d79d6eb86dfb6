import { afterEach, describe, expect, it } from 'vitest';
import { type CounterPosition, counterCodec } from '../support/counter-codec.js';
import { cp } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

/**
 * History 2 forked from history 1 after 1.11: the session's write 1.12 was lost in the election.
 * The router sampled the old primary at 1.20 (which covers 1.12); then a new primary took over
 * behind the router's back, the way a MongoDB replica-set client follows an election by itself.
 */
const FORKS = new Map([[2, 11]]);
const NEW_PRIMARY = cp('2.15');

async function electedBehindTheSample(observed: CounterPosition | null | undefined) {
  const f = await routerFixture({
    adapter: { codec: counterCodec(FORKS) },
    // No wait: the replicas stay behind, so the read falls back to the primary at once.
    router: { wait: { budgetMs: 0 } },
    configure: (a) => {
      a.primary.position = cp('1.20');
      a.setAll({ applied: cp('1.10') });
    },
  });
  expect(f.router.monitor.primaryPosition()).toEqual(cp('1.20'));
  f.adapter.primary.position = NEW_PRIMARY;
  f.adapter.primary.observed = observed;
  return f;
}

describe('a primary read that ran on a primary elected after the sample (invariant 4)', () => {
  it('is judged again when its observed position does not cover the session; a lost write is not served', async () => {
    const f = await electedBehindTheSample(undefined);
    await expect(f.read(sessionAt('1.12'))).rejects.toMatchObject({
      code: 'TIDEMARK_OTHER_HISTORY',
    });
    // The sample's shortcut sent the read to the primary; its answer (2.15) did not cover 1.12,
    // so the router probed the primary and the verdict was another history.
    expect(f.adapter.readTargets()).toEqual(['primary']);
    expect(f.router.monitor.primaryPosition()).toEqual(NEW_PRIMARY);
    expect(f.router.metrics().otherHistory).toBe(1);
    expect(f.events.otherHistory).toHaveLength(1);
  });

  it('under otherHistory "primary" the answer is labelled primary-other-history, not fresh', async () => {
    const f = await routerFixture({
      adapter: { codec: counterCodec(FORKS) },
      router: { wait: { budgetMs: 0 }, otherHistory: 'primary' },
      configure: (a) => {
        a.primary.position = cp('1.20');
        a.setAll({ applied: cp('1.10') });
      },
    });
    f.adapter.primary.position = NEW_PRIMARY;
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.target).toBe('primary');
    expect(decision.reason).toBe('primary-other-history');
  });

  it('a write that survived the election is served as a fresh primary read after the check', async () => {
    const f = await electedBehindTheSample(undefined);
    const probes = f.adapter.probeCount('primary');
    const { decision } = await f.read(sessionAt('1.11'));
    expect(decision.reason).toBe('primary-fallback');
    // 2.15 covers 1.11 (shared history up to the fork): no second look at the primary.
    expect(f.adapter.probeCount('primary')).toBe(probes);
  });

  it('control: a primary read that reports no position is trusted on the sample and misses the write', async () => {
    const f = await electedBehindTheSample(null);
    const { decision } = await f.read(sessionAt('1.12'));
    expect(decision.target).toBe('primary');
    expect(decision.reason).toBe('primary-fallback');
    expect(f.router.metrics().otherHistory).toBe(0);
  });
});
