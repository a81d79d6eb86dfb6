/** Re-exported from `@tidemark/core`, where the grouping lives so every exporter shares it. */
export { type RouteOutcome, routeOutcome } from '@tidemark/core';
export {
  ATTR,
  DB_OPERATION_DURATION_BUCKETS,
  DB_SYSTEM_NAMES,
  type DbSystemName,
  errorType,
  METRIC,
  WAIT_DURATION_BUCKETS,
} from './conventions.js';
export {
  INSTRUMENTATION_SCOPE,
  instrumentRouter,
  type TidemarkInstrumentation,
  type TidemarkOtelOptions,
} from './instrument.js';
export type { NodeAddress, NodeSpec } from './nodes.js';
export { VERSION } from './version.js';
