export { App, type AppStats, type ControlMode, type OpOutcome } from './app.js';
export {
  type CampaignOptions,
  type CampaignResult,
  CHAOS_TARGETS,
  runCampaign,
} from './campaign.js';
export {
  ANOMALY_CLASSES,
  type Anomaly,
  type AnomalyClass,
  type CheckResult,
  checkHistory,
  type LostWrite,
} from './checker.js';
export {
  capabilitiesOf,
  FAULT_KINDS,
  type FaultKind,
  FaultScheduler,
} from './faults.js';
export type { ErrorClass, Failover, History, Operation } from './history.js';
export { READ_LIMIT } from './history.js';
export { hashText, Prng, parseSeed } from './prng.js';
export { closingLine, failed, formatReport } from './report.js';
