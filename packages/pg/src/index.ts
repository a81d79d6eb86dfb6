export {
  createPgAdapter,
  type PgAdapter,
  type PgAdapterOptions,
  type PgRoundTrips,
} from './adapter.js';
export { createPgCodec, type PgPosition } from './codec.js';
export { PgAdapterError, PgErrorCode } from './errors.js';
export { formatLsn, parseLsn } from './lsn.js';
export { READ_ONLY_OPTION } from './pool-config.js';
export { isRetryablePgError } from './retryable.js';
export {
  type HistoryLine,
  parseHistoryFile,
  TimelineHistory,
  type TimelineSwitch,
} from './timeline-history.js';
