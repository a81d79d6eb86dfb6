import type { Session } from '@tidemark/core';
import { PrismaErrorCode, TidemarkPrismaError } from './errors.js';
import type { RouterOver } from './routers.js';

/** A primary connection held through `router.write` for the whole of one Prisma transaction. */
export interface TransactionLease<C> {
  readonly connection: C;
  /** End the lease (with the error that ended the transaction, if any). */
  release(error?: unknown): void;
  /** Settles when the router has put the transaction's position into the session. */
  readonly done: Promise<void>;
}

/**
 * Lease a primary connection through `router.write` and keep it until `release`: Prisma sends
 * BEGIN, its statements and COMMIT on it itself, so the router's own transaction is off, and the
 * position the router records after the callback is the commit's.
 */
export async function leaseForTransaction<C>(
  router: RouterOver<C>,
  session: Session,
): Promise<TransactionLease<C>> {
  let release!: (error?: unknown) => void;
  const released = new Promise<unknown>((resolve) => {
    release = resolve;
  });
  let leased!: (connection: C) => void;
  const ready = new Promise<C>((resolve) => {
    leased = resolve;
  });
  const done = router.write(
    session,
    async (connection) => {
      leased(connection);
      const error = await released;
      if (error) throw error;
    },
    { transaction: false },
  );
  const connection = await Promise.race([
    ready,
    done.then(() => {
      throw new TidemarkPrismaError(
        PrismaErrorCode.PrismaInternals,
        'The router ended the transaction lease before it started.',
      );
    }),
  ]);
  return {
    connection,
    release: (error) => release(error instanceof Error ? error : undefined),
    done,
  };
}
