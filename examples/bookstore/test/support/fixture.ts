import type { ScenarioName, StrategyName } from '../../src/options.js';
import { seededRandom } from '../../src/random.js';
import type {
  ReadOutcome,
  ReportData,
  ReportRead,
  ReportReplicaState,
  ReportRun,
} from '../../src/report/model.js';
import type { RunResult } from '../../src/result.js';

/**
 * A made-up but self-consistent demo run (every strategy, both scenarios, shadow predictions),
 * so the report can be rendered without a database. Counts in each result line equal the
 * samples' outcomes.
 */
export function syntheticReport(): ReportData {
  const random = seededRandom(7);
  const runs: ReportRun[] = [];
  const strategies: StrategyName[] = ['naive', 'time-window', 'lab-router', 'tidemark', 'shadow'];
  for (const scenario of ['idle', 'paused'] as const) {
    const orders = scenario === 'idle' ? 200 : 60;
    for (const strategy of strategies) {
      const reads: ReportRead[] = [];
      const duration = scenario === 'idle' ? 2 : 0.8;
      for (let i = 0; i < orders * 5; i++) {
        const afterWrite = i % 5 === 0;
        const outcome = outcomeOf(strategy, scenario, afterWrite, i);
        const base = strategy === 'tidemark' ? 0.5 : 0.2;
        const waited = outcome === 'replica_waited' ? 1 + 3 * random.next() : 0;
        reads.push({
          at: (i / (orders * 5)) * duration,
          ms: base * (1 + 4 * random.next() ** 3) + waited,
          outcome,
        });
      }
      runs.push({
        result: resultOf(scenario, strategy, orders, reads, duration),
        reads,
        replica: strategy === 'tidemark' ? replicaStates(scenario, duration) : [],
      });
    }
  }
  return {
    meta: {
      db: 'pg',
      via: undefined,
      cluster: 'synthetic data, no cluster',
      seed: 1,
      customers: 100,
      waitBudgetMs: 250,
      generatedAt: '2026-12-03T00:00:00.000Z',
    },
    runs,
    notes: ['synthetic'],
  };
}

function outcomeOf(
  strategy: StrategyName,
  scenario: ScenarioName,
  afterWrite: boolean,
  i: number,
): ReadOutcome {
  const needsPrimary = afterWrite || i % 5 < 3; // readers with orders of their own
  switch (strategy) {
    case 'naive':
      return 'replica';
    case 'time-window':
    case 'lab-router':
      return needsPrimary && (scenario === 'paused' || i % 2 === 0) ? 'primary' : 'replica';
    case 'tidemark':
      if (scenario === 'paused') return needsPrimary ? 'primary_fallback' : 'replica';
      return afterWrite ? 'replica_waited' : 'replica';
    case 'shadow':
      return 'shadow';
  }
}

function resultOf(
  scenario: ScenarioName,
  strategy: StrategyName,
  orders: number,
  reads: readonly ReportRead[],
  duration: number,
): RunResult {
  const primary = reads.filter((r) => /primary|shadow/.test(r.outcome)).length;
  const checked = Math.round(orders * 5 * 0.75);
  const missing = strategy === 'naive' ? (scenario === 'paused' ? checked : 37) : 0;
  const waits = reads.filter((r) => r.outcome === 'replica_waited').length;
  return {
    scenario,
    strategy,
    orders,
    reads: reads.length,
    missing_in_list: missing,
    replica_reads: reads.length - primary,
    primary_reads: primary,
    errors: 0,
    waits,
    wait_ms_p50: waits > 0 ? 2 : null,
    read_ms_p50: 0.3,
    read_ms_p99: 3,
    checked_reads: checked,
    missing_after_write: strategy === 'naive' ? (scenario === 'paused' ? orders : 30) : 0,
    duration_s: duration,
    db: 'pg',
    ...(strategy === 'shadow'
      ? {
          shadow: {
            predicted_replica_reads: reads.length - checked,
            predicted_primary_reads: checked,
            predicted_errors: 0,
            predicted_waits: scenario === 'idle' ? orders : 0,
            predicted_wait_ms_p50: scenario === 'idle' ? 1 : null,
            predicted_naive_missing: missing,
            predicted_naive_missing_after_write: scenario === 'paused' ? orders : 25,
          },
        }
      : {}),
  };
}

function replicaStates(scenario: ScenarioName, duration: number): ReportReplicaState[] {
  const states: ReportReplicaState[] = [];
  for (let at = 0; at <= duration; at += 0.1) {
    const behind = scenario === 'paused' ? at : 0.002 * ((at * 10) % 3);
    states.push({
      at,
      event: true,
      replica: 'replica1',
      lagSeconds: behind,
      stalenessSeconds: behind,
      paused: scenario === 'paused',
      reachable: true,
    });
  }
  return states;
}
