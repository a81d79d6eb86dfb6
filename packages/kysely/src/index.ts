export { TidemarkDialect, type TidemarkDialectOptions } from './dialect.js';
export type { RouterLike } from './driver.js';
export { KyselyErrorCode, TidemarkKyselyError } from './errors.js';
export { isReplicaSafe } from './query-kind.js';
