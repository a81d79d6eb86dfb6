// The conformance suite: the adapter contract and every scenario against every target named in
// TIDEMARK_TARGETS (comma-separated, default pg15). Prints one line per target and scenario
// (contract checks included) and a summary table.
import { afterAll, describe, expect, it } from 'vitest';
import {
  allScenarios,
  formatLine,
  formatSummary,
  loadTarget,
  parseTargetList,
  type Scenario,
  type ScenarioReport,
  selectScenarios,
  settleFromEnv,
} from '../src/index.js';
import { describeConformanceTarget } from '../src/vitest-suite.js';

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

// TIDEMARK_SETTLE runs every router with one settle mode; say which, since it changes what runs.
let settleError: unknown;
try {
  const { settle } = settleFromEnv();
  if (settle)
    console.warn(`conformance: TIDEMARK_SETTLE=${settle}: every router settles ${settle}`);
} catch (error) {
  settleError = error;
}

it('TIDEMARK_TARGETS, TIDEMARK_SCENARIOS and TIDEMARK_SETTLE name only known values', () => {
  expect(targetListError, String(targetListError)).toBeUndefined();
  expect(scenarioListError, String(scenarioListError)).toBeUndefined();
  expect(settleError, String(settleError)).toBeUndefined();
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
  describeConformanceTarget({
    name,
    clusterTarget: name,
    load: () => loadTarget(name),
    scenarios: selected,
    record,
  });
}

afterAll(() => {
  if (reports.length > 0) console.log(formatSummary(reports));
});
