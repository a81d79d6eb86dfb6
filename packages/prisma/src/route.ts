import { AsyncLocalStorage } from 'node:async_hooks';
import {
  isTidemarkError,
  mayRunOnReplica,
  type SqlFlavour,
  type TidemarkError,
} from '@tidemark/core';
import { PrismaErrorCode, TidemarkPrismaError } from './errors.js';

/**
 * Where the statements of one Prisma operation go, set by the `readReplicas` extension around the
 * operation: `auto` (a read statement to a replica through the router, the rest to the primary),
 * `primary` (everything to the primary: writes, raw queries, `$primary()`), `replica` (everything
 * through `router.read`: `$replica()`). Without the extension every statement is `auto`.
 */
export type Route = 'auto' | 'primary' | 'replica';

/** One operation under the extension: its route, and the router's error if one of its statements had one. */
interface Operation {
  readonly route: Route;
  routerError?: TidemarkError;
}

const operations = new AsyncLocalStorage<Operation>();

/**
 * Run one Prisma operation with its statements sent by `route`. Prisma's operations are lazy
 * (a PrismaPromise runs when awaited), so it is awaited here, inside the route's context.
 *
 * Prisma turns an error thrown by a driver adapter into a `PrismaClientKnownRequestError` that
 * keeps the code and message but not the class, `retryable` or the error's own fields. When the
 * operation failed with the code of an error the router raised for one of its statements, that
 * error is thrown instead, so callers catch `ReplicasBehindError` (and the rest) as they would
 * from `router.read`.
 */
export function withRoute<T>(route: Route, fn: () => PromiseLike<T>): Promise<T> {
  const operation: Operation = { route };
  return operations.run(operation, async () => {
    try {
      return await fn();
    } catch (error) {
      const routerError = operation.routerError;
      if (routerError && (error as { code?: unknown } | null)?.code === routerError.code) {
        throw routerError;
      }
      throw error;
    }
  });
}

/** Keep the router's error for the operation that is running (see `withRoute`). */
export function noteRouterError(error: unknown): void {
  const operation = operations.getStore();
  if (operation && isTidemarkError(error)) operation.routerError = error;
}

export function currentRoute(): Route {
  return operations.getStore()?.route ?? 'auto';
}

/**
 * Refuse a transaction under `$replica()`: transactions run on the primary, and Prisma opens one
 * for some single operations (a create on MySQL, whose INSERT has no RETURNING; nested writes),
 * which would otherwise run on the primary unnoticed.
 */
export function refuseTransactionOnReplica(): void {
  if (currentRoute() !== 'replica') return;
  const error = new TidemarkPrismaError(
    PrismaErrorCode.ReplicaInTransaction,
    'A transaction through $replica(): transactions (and writes Prisma runs in one) go to the primary; run it on the client itself or on $primary().',
  );
  noteRouterError(error);
  throw error;
}

/** Which adapter call a statement comes from: `queryRaw` returns rows, `executeRaw` a count. */
export type StatementCall = 'query' | 'execute';

const calls = new AsyncLocalStorage<StatementCall>();

export function withCall<T>(call: StatementCall, fn: () => T): T {
  return calls.run(call, fn);
}

/**
 * Whether a statement outside a transaction goes through `router.read`: under `replica` always,
 * under `auto` only when it comes from `queryRaw`, starts with `select` or `with`, and has no
 * write, lock or sequence call in it (`mayRunOnReplica`). Everything else, including statements
 * whose adapter call is unknown (`executeScript`), goes to the primary.
 */
export function isRoutedRead(sql: string, flavour: SqlFlavour): boolean {
  const route = currentRoute();
  if (route === 'replica') return true;
  if (route === 'primary' || calls.getStore() !== 'query') return false;
  return /^[\s(]*(select|with)\b/i.test(stripLeadingComments(sql)) && mayRunOnReplica(sql, flavour);
}

function stripLeadingComments(sql: string): string {
  let text = sql.trimStart();
  for (;;) {
    if (text.startsWith('--')) {
      const end = text.indexOf('\n');
      text = end === -1 ? '' : text.slice(end + 1).trimStart();
    } else if (text.startsWith('/*')) {
      const end = text.indexOf('*/');
      text = end === -1 ? '' : text.slice(end + 2).trimStart();
    } else {
      return text;
    }
  }
}
