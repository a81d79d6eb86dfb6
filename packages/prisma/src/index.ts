export {
  type PgOptions,
  PrismaTidemark,
  type PrismaTidemarkOptions,
  type RouterLike,
} from './adapter.js';
export { PrismaErrorCode, TidemarkPrismaError } from './errors.js';
export { type ReadReplicasOptions, readReplicas } from './extension.js';
