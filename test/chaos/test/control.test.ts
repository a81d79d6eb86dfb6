import { describe, expect, it } from 'vitest';
import { runCampaign } from '../src/campaign.js';
import { closingLine, formatReport } from '../src/report.js';

// The proof that the checker can fail: the same campaign with the naive control (writes to the
// primary, reads round-robin over the replicas, no tokens) must show anomalies. A checker that
// passes this control would prove nothing about the router.
describe('chaos campaign, naive control (pg18)', () => {
  it('finds anomalies', async () => {
    const result = await runCampaign({
      target: 'pg18',
      durationSec: 20,
      seed: 15,
      control: 'naive',
      sessions: 6,
      // Faults that keep the replicas behind and the cluster whole: enough to make the control fail.
      faults: new Set(['pause-replay', 'kill-replica']),
    });
    for (const line of formatReport(result)) console.log(line);
    expect(result.history.operations.length).toBeGreaterThan(100);
    expect(result.faults).toBeGreaterThan(0);
    expect(result.check.anomalies, closingLine(result)).toBeGreaterThan(0);
  });
});
