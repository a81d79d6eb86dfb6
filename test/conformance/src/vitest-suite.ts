// The suite as vitest tests: one describe per target, one test per scenario, on one cluster the
// target's scenarios share (fresh-cluster scenarios start their own). Used by the conformance
// run and by integrations that run the suite through their front door.
import { type Cluster, providerCapabilities } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FrontDoor, throughFrontDoor } from './front-door.js';
import { formatFailures, formatLine, formatSummary } from './report.js';
import {
  failedToStart,
  missingCapabilities,
  notApplicable,
  prepareCluster,
  runOnFreshCluster,
  runScenario,
} from './runner.js';
import type { Scenario } from './scenario.js';
import { frontDoorScenarios } from './scenarios/index.js';
import { loadTarget } from './targets/index.js';
import type { AnyConformanceTarget, ScenarioReport } from './types.js';

export interface DescribeTargetOptions {
  /** Name in report lines and test titles (`pg15`, `pg15+drizzle`). */
  readonly name: string;
  /** The cluster target whose provider capabilities apply (`pg15` for `pg15+drizzle`). */
  readonly clusterTarget: string;
  load(): Promise<AnyConformanceTarget>;
  readonly scenarios: readonly Scenario[];
  /** Called with every report, not-applicable ones included (to print and summarise them). */
  record(report: ScenarioReport): void;
}

/**
 * Register the target's scenarios as vitest tests. A scenario the provider's clusters cannot
 * stage is a skipped test that says so and a not-applicable report, never a pass; a cluster that
 * fails to start fails every scenario with the reason.
 */
export function describeConformanceTarget(options: DescribeTargetOptions): void {
  const { name, record } = options;
  const providerName = process.env['TIDEMARK_PROVIDER'] ?? 'local';
  const capabilities = providerCapabilities(providerName, options.clusterTarget);
  describe.sequential(`target ${name}`, () => {
    let target: AnyConformanceTarget | undefined;
    let cluster: Cluster | undefined;
    let startError: unknown;

    beforeAll(async () => {
      const started = performance.now();
      try {
        target = await options.load();
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

    for (const scenario of options.scenarios) {
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

export interface FrontDoorSuiteOptions {
  /** The tool's name in titles and messages (`Drizzle`). */
  readonly tool: string;
  /** Cluster targets the integration supports; TIDEMARK_TARGETS is narrowed to these. */
  readonly supported: readonly string[];
  /** What runs when TIDEMARK_TARGETS is unset. */
  readonly defaults: readonly string[];
  /** The integration's front door for one cluster target. */
  door(target: string): FrontDoor;
}

/**
 * The front-door scenarios through an integration, on every supported target TIDEMARK_TARGETS
 * names (or the defaults), each reported as `<target>+<door>` with the suite's report lines and
 * summary. Naming no supported target is a loud skip, never a pass.
 */
export function describeThroughFrontDoor(options: FrontDoorSuiteOptions): void {
  const requested = process.env['TIDEMARK_TARGETS'];
  const targets = (requested ?? options.defaults.join(','))
    .split(',')
    .map((t) => t.trim())
    .filter((t) => options.supported.includes(t));
  const reports: ScenarioReport[] = [];
  if (targets.length === 0) {
    const reason = `TIDEMARK_TARGETS=${JSON.stringify(requested)} names none of ${options.supported.join(', ')}`;
    console.warn(`\n*** conformance through ${options.tool} SKIPPED, NOT PASSED: ${reason} ***\n`);
    describe(`conformance through ${options.tool}`, () => {
      it.skip(`SKIPPED (not a pass): ${reason}`, () => undefined);
    });
    return;
  }
  for (const name of targets) {
    const door = options.door(name);
    describeConformanceTarget({
      name: `${name}+${door.name}`,
      clusterTarget: name,
      load: async () => throughFrontDoor(await loadTarget(name), door),
      scenarios: frontDoorScenarios,
      record(report) {
        reports.push(report);
        console.log(formatLine(report));
      },
    });
  }
  afterAll(() => {
    if (reports.length > 0) console.log(formatSummary(reports));
  });
}
