export { classifyAgainstPrimary, createMysqlCodec, type PrimaryVerdict } from './codec.js';
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
export { isUuid, normalizeUuid } from './uuid.js';
