import { TidemarkError } from '@tidemark/core';

/** Stable codes of the errors this package throws (all `TIDEMARK_`-prefixed, like core's). */
export const PrismaErrorCode = {
  /**
   * A Prisma internal this package relies on is missing or changed shape (another major of
   * `@prisma/adapter-pg` or `@prisma/client`): routing stops rather than guess.
   */
  PrismaInternals: 'TIDEMARK_PRISMA_INTERNALS',
  /**
   * `$replica()` inside a transaction, or a transaction through `$replica()` (including one
   * Prisma opens for a write): a transaction runs on the primary.
   */
  ReplicaInTransaction: 'TIDEMARK_PRISMA_REPLICA_IN_TRANSACTION',
} as const;

export type PrismaErrorCode = (typeof PrismaErrorCode)[keyof typeof PrismaErrorCode];

/** A misuse of the Tidemark Prisma adapter or extension; the message says what to do instead. */
export class TidemarkPrismaError extends TidemarkError {
  declare readonly code: PrismaErrorCode;
  constructor(code: PrismaErrorCode, message: string) {
    super(code, message);
  }
}
