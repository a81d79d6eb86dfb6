import type { ClusterCapability } from '@tidemark/test-clusters';
import type { ScenarioContext } from './context.js';
import type { ScenarioOutcome } from './types.js';

/** One conformance scenario: database-neutral, run unchanged against every target. */
export interface Scenario {
  /** Short kebab-case name used in report lines, e.g. `paused-replay`. */
  readonly name: string;
  /** One sentence: what is proven and what the control must show. */
  readonly summary: string;
  /**
   * True for scenarios that change the topology (kill, promote): the runner gives them a cluster
   * of their own, so scenario order never matters.
   */
  readonly freshCluster: boolean;
  /**
   * What the scenario makes the cluster do beyond starting and querying (pause replay, kill,
   * promote, ...). On a cluster that lacks one, the scenario is reported `not-applicable`
   * (never a pass) without running.
   */
  readonly needs?: readonly ClusterCapability[];
  run<P, C>(ctx: ScenarioContext<P, C>): Promise<ScenarioOutcome>;
}
