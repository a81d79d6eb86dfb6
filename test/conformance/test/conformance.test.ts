// The conformance suite: the adapter contract and every scenario against every target named in
// TIDEMARK_TARGETS (comma-separated, default pg15). Prints one line per target and scenario
// (contract checks included) and a summary table.
import { type Cluster, providerCapabilities } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AnyConformanceTarget,
  allScenarios,
  failedToStart,
  formatFailures,
  formatLine,
  formatSummary,
  loadTarget,
  missingCapabilities,
  notApplicable,
  parseTargetList,
  prepareCluster,
  runOnFreshCluster,
  runScenario,
  type Scenario,
  type ScenarioReport,
  selectScenarios,
} from '../src/index.js';

const reports: ScenarioReport[] = [];

function record(report: ScenarioReport): void {
  reports.push(report);
  console.log(formatLine(report));
}

let targetNames: string[] = [];
let targetListError: unknown;
try {
  targetNames = parseTargetList(process.env['TIDEMARK_TARGETS']);
} catch (error) {
  targetListError = error;
}

// TIDEMARK_SCENARIOS (comma-separated) narrows a run while developing; say so loudly.
let selected: readonly Scenario[] = [];
let scenarioListError: unknown;
try {
  selected = selectScenarios(process.env['TIDEMARK_SCENARIOS']);
} catch (error) {
  scenarioListError = error;
}
if (selected.length > 0 && selected.length < allScenarios.length) {
  const left = allScenarios.filter((s) => !selected.includes(s)).map((s) => s.name);
  console.warn(
    `conformance: TIDEMARK_SCENARIOS is set; NOT RUNNING ${left.join(', ')}. Unset it for a full run.`,
  );
}

it('TIDEMARK_TARGETS and TIDEMARK_SCENARIOS name only known targets and scenarios', () => {
  expect(targetListError, String(targetListError)).toBeUndefined();
  expect(scenarioListError, String(scenarioListError)).toBeUndefined();
  expect(targetNames.length).toBeGreaterThan(0);
});

/**
 * Why a target cannot run here, for the few targets that may be absent (a real MongoDB). Printed
 * loudly and registered as a skipped test, so it is visible and never counted as passed.
 */
async function skipReason(name: string): Promise<string | undefined> {
  const target = await loadTarget(name);
  return target.unavailableReason ? target.unavailableReason() : undefined;
}

for (const name of targetNames) {
  const skipped = await skipReason(name);
  if (skipped !== undefined) {
    const banner = '!'.repeat(100);
    console.warn(
      `${banner}\nconformance target=${name} SKIPPED, NOT PASSED: ${skipped}\n${banner}`,
    );
    describe(`target ${name}`, () => {
      it.skip(`SKIPPED (not a pass): ${skipped}`, () => undefined);
    });
    continue;
  }
  // What this target's clusters can stage, known before one starts: a scenario needing more is
  // registered as a skipped test that says so, and reported not-applicable, never passed.
  const providerName = process.env['TIDEMARK_PROVIDER'] ?? 'local';
  const capabilities = providerCapabilities(providerName, name);
  describe.sequential(`target ${name}`, () => {
    let target: AnyConformanceTarget | undefined;
    let cluster: Cluster | undefined;
    let startError: unknown;

    beforeAll(async () => {
      const started = performance.now();
      try {
        target = await loadTarget(name);
        cluster = await prepareCluster(target);
        console.log(
          `conformance target=${name} cluster=started version=${JSON.stringify(cluster.version)} ms=${Math.round(performance.now() - started)}`,
        );
      } catch (error) {
        startError = error;
        console.error(
          `conformance target=${name} cluster=FAILED reason=${JSON.stringify(String(error))}`,
        );
      }
    });

    afterAll(async () => {
      await cluster?.teardown();
    });

    for (const scenario of selected) {
      const missing = missingCapabilities(scenario, capabilities);
      if (missing.length > 0) {
        const label = `${scenario.name}: NOT APPLICABLE (not a pass): needs ${missing.join(', ')} (provider ${providerName})`;
        it.skip(label, () => undefined);
        record(notApplicable(name, scenario.name, missing));
        continue;
      }
      it(scenario.name, async (testContext) => {
        let report: ScenarioReport;
        // A target whose cluster cannot start fails every scenario with the reason; it is never
        // skipped (fresh-cluster scenarios would only fail the same way, more slowly).
        if (!target || !cluster) report = failedToStart(name, scenario.name, startError);
        else if (scenario.freshCluster) {
          report = await runOnFreshCluster(target, scenario, (m) => console.log(m), capabilities);
        } else report = await runScenario(target, cluster, scenario, (m) => console.log(m));
        record(report);
        // The started cluster declared less than its provider promised: still never a pass.
        if (report.result === 'not-applicable') {
          testContext.skip(`NOT APPLICABLE (not a pass): needs ${(report.needs ?? []).join(', ')}`);
          return;
        }
        expect(report.error, formatFailures(report)).toBeUndefined();
        expect(
          report.checks.filter((c) => !c.pass),
          formatFailures(report),
        ).toEqual([]);
        expect(report.checks.length).toBeGreaterThan(0);
        expect(report.result).toBe('pass');
      });
    }
  });
}

afterAll(() => {
  if (reports.length > 0) console.log(formatSummary(reports));
});
