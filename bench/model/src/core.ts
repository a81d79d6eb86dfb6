/**
 * The one place this package reaches into `@tidemark/core`: the Router, Session and policies come
 * from core's own sources, and the replication simulator (virtual clock, simulated cluster,
 * adapter and polling monitor) from core's test support, the same files core's property tests
 * run on. Both through relative paths, so there is exactly one copy of every class (a simulator
 * built on core's sources next to a Router from core's `dist` would be two) and core's public API
 * gains no test-support entry point.
 */
export {
  balanced,
  PRIMARY,
  ReplicasBehindError,
  Router,
  type RouterOptions,
  Session,
  TidemarkError,
} from '../../../packages/core/src/index.js';
export type { CounterPosition } from '../../../packages/core/test/support/counter-codec.js';
export {
  ReplicationSimulator,
  type SimConnection,
  SimulatedAdapter,
  SimulatedPollingMonitor,
} from '../../../packages/core/test/support/simulator.js';
