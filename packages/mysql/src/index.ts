export {
  createMysqlAdapter,
  type MysqlAdapter,
  type MysqlAdapterOptions,
  type MysqlRoundTrips,
} from './adapter.js';
export { classifyAgainstPrimary, createMysqlCodec, type PrimaryVerdict } from './codec.js';
export { MysqlAdapterError, MysqlErrorCode } from './errors.js';
export type { FlavourName } from './flavour.js';
export { type GtidInterval, MAX_GNO, MIN_GNO } from './gno-intervals.js';
export {
  DEFAULT_GTID_TEXT_LIMIT,
  GtidSet,
  type GtidSetEntry,
  type GtidSetEntryInput,
  type GtidSetFormatOptions,
  type GtidSetParseOptions,
  isGtidTag,
  normalizeTag,
} from './gtid-set.js';
export {
  decodeGtidSetToken,
  encodeGtidSetToken,
  MAX_GTID_TOKEN_LENGTH,
} from './gtid-token.js';
export { classifyMariadbAgainstPrimary } from './mariadb-classify.js';
export { createMariadbCodec } from './mariadb-codec.js';
export {
  compareMariadbPositions,
  DEFAULT_MARIADB_TEXT_LIMIT,
  decodeMariadbPositionToken,
  encodeMariadbPositionToken,
  MAX_MARIADB_TOKEN_LENGTH,
  type MariadbCompareOptions,
  type MariadbGtid,
  type MariadbGtidInput,
  MariadbGtidPosition,
  type MariadbPositionParseOptions,
  mergeMariadbPositions,
} from './mariadb-gtid.js';
export { isRetryableMysqlError } from './retryable.js';
export { isUuid, normalizeUuid } from './uuid.js';
