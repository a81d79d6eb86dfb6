// The suite as vitest tests: one describe per target, one test per scenario, on one cluster the
// target's scenarios share (fresh-cluster scenarios start their own). Used by the conformance
// run and by integrations that run the suite through their front door.
import { type Cluster, providerCapabilities } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatFailures } from './report.js';
import {
  failedToStart,
  missingCapabilities,
  notApplicable,
  prepareCluster,
  runOnFreshCluster,
  runScenario,
} from './runner.js';
import type { Scenario } from './scenario.js';
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
