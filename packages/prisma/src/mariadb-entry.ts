/**
 * `@tidemark/prisma/mariadb`: the front door for Prisma on MySQL or MariaDB, over
 * `@prisma/adapter-mariadb` and a Tidemark router over `@tidemark/mysql`. Same names as the
 * PostgreSQL entry, so an app switches databases by its import path.
 */
export { PrismaErrorCode, TidemarkPrismaError } from './errors.js';
export { type ReadReplicasOptions, readReplicas } from './extension.js';
export {
  type MariaDbOptions,
  type MysqlRouterLike,
  PrismaTidemark,
  type PrismaTidemarkMariaDbOptions,
} from './mariadb.js';
