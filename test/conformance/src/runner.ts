import type { Cluster, ClusterCapability } from '@tidemark/test-clusters';
import { createContext } from './context.js';
import { errorText, restoreCluster, waitForCatchUp } from './kit.js';
import type { Scenario } from './scenario.js';
import type { AnyConformanceTarget, ScenarioReport } from './types.js';

/** Start a target's cluster and create the workload's schema, replicated everywhere. */
export async function prepareCluster(target: AnyConformanceTarget): Promise<Cluster> {
  const cluster = await target.startCluster();
  try {
    await target.workload.setup(cluster);
    await target.frontDoor?.setup?.(cluster);
    const ctx = createContext(target, cluster, () => undefined);
    try {
      await waitForCatchUp(ctx);
    } finally {
      await ctx.close();
    }
    return cluster;
  } catch (error) {
    await cluster.teardown().catch(() => undefined);
    throw error;
  }
}

/** The capabilities `scenario` needs that `capabilities` lacks (empty: it can run). */
export function missingCapabilities(
  scenario: Scenario,
  capabilities: ReadonlySet<ClusterCapability>,
): ClusterCapability[] {
  return (scenario.needs ?? []).filter((need) => !capabilities.has(need));
}

/** The report of a scenario the target's cluster cannot stage. Never a pass. */
export function notApplicable(
  target: string,
  scenario: string,
  needs: readonly ClusterCapability[],
): ScenarioReport {
  return {
    target,
    scenario,
    result: 'not-applicable',
    needs,
    ms: 0,
    counts: {},
    checks: [],
  };
}

/**
 * Run one scenario on a cluster and return what it measured. A scenario that needs a capability
 * the cluster lacks does not run: its report says `not-applicable`. Never throws: an unexpected error
 * becomes a failed report carrying the error. On a shared cluster, replay and stopped replicas
 * are restored afterwards so the next scenario starts clean.
 */
export async function runScenario(
  target: AnyConformanceTarget,
  cluster: Cluster,
  scenario: Scenario,
  log: (message: string) => void = () => undefined,
): Promise<ScenarioReport> {
  const missing = missingCapabilities(scenario, cluster.capabilities);
  if (missing.length > 0) return notApplicable(target.name, scenario.name, missing);
  const ctx = createContext(target, cluster, log);
  const started = performance.now();
  let report: ScenarioReport;
  try {
    const outcome = await scenario.run(ctx);
    report = {
      target: target.name,
      scenario: scenario.name,
      result: outcome.checks.every((c) => c.pass) ? 'pass' : 'fail',
      ms: performance.now() - started,
      counts: outcome.counts,
      checks: outcome.checks,
    };
  } catch (error) {
    report = {
      target: target.name,
      scenario: scenario.name,
      result: 'fail',
      ms: performance.now() - started,
      counts: {},
      checks: [],
      error: errorText(error),
    };
  }
  await ctx.close();
  if (!scenario.freshCluster) {
    const restore = createContext(target, cluster, log);
    try {
      await restoreCluster(restore);
    } catch (error) {
      log(`restoring ${target.name} after ${scenario.name} failed: ${errorText(error)}`);
      report = { ...report, result: 'fail', error: `cluster restore failed: ${errorText(error)}` };
    } finally {
      await restore.close();
    }
  }
  return report;
}

/**
 * Run a scenario on a cluster of its own, torn down afterwards. With `capabilities` (what the
 * target's clusters are known to declare) a scenario they cannot stage starts no cluster.
 */
export async function runOnFreshCluster(
  target: AnyConformanceTarget,
  scenario: Scenario,
  log: (message: string) => void = () => undefined,
  capabilities?: ReadonlySet<ClusterCapability>,
): Promise<ScenarioReport> {
  if (capabilities) {
    const missing = missingCapabilities(scenario, capabilities);
    if (missing.length > 0) return notApplicable(target.name, scenario.name, missing);
  }
  const started = performance.now();
  let cluster: Cluster;
  try {
    cluster = await prepareCluster(target);
  } catch (error) {
    return failedToStart(target.name, scenario.name, error, performance.now() - started);
  }
  try {
    return await runScenario(target, cluster, scenario, log);
  } finally {
    await cluster.teardown();
  }
}

/** The report of a scenario that could not run because its cluster did not start. */
export function failedToStart(
  target: string,
  scenario: string,
  error: unknown,
  ms = 0,
): ScenarioReport {
  return {
    target,
    scenario,
    result: 'fail',
    ms,
    counts: {},
    checks: [],
    error: `cluster for ${target} could not start: ${errorText(error)}`,
  };
}
