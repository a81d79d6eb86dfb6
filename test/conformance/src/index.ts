export {
  CLUSTER_NAME,
  createContext,
  type RouterConfig,
  type RouterHandle,
  type ScenarioContext,
  settleFromEnv,
  type WaitTrace,
} from './context.js';
export {
  type FrontDoor,
  type NaiveOrders,
  type OrderClient,
  type RoutedOrders,
  type RoutedRead,
  throughFrontDoor,
} from './front-door.js';
export { type NaiveRead, NaiveRouter } from './naive.js';
export { formatFailures, formatLine, formatSummary } from './report.js';
export {
  failedToStart,
  missingCapabilities,
  notApplicable,
  prepareCluster,
  runOnFreshCluster,
  runScenario,
} from './runner.js';
export type { Scenario } from './scenario.js';
export {
  adapterContract,
  allScenarios,
  CONTRACT_GROUP,
  frontDoorScenarios,
  scenarios,
  selectScenarios,
} from './scenarios/index.js';
export { DEFAULT_TARGETS, loadTarget, parseTargetList, targets } from './targets/index.js';
export { type ReadTrace, type TracedAdapter, traceAdapter } from './traced-adapter.js';
export type {
  AnyConformanceTarget,
  BadPositions,
  Check,
  ConformanceTarget,
  ContractOps,
  Order,
  ScenarioOutcome,
  ScenarioReport,
  Workload,
} from './types.js';
