import { Prisma } from '@prisma/client/extension';
import { ConfigError } from '@tidemark/core';
import { PrismaErrorCode, TidemarkPrismaError } from './errors.js';
import { type Route, withRoute } from './route.js';
import { isTidemarkRouter, type RouterOver } from './routers.js';

/** Model operations that only read: routed by the session (as `@prisma/extension-read-replicas` lists them). */
const READ_OPERATIONS = new Set([
  'findFirst',
  'findFirstOrThrow',
  'findMany',
  'findUnique',
  'findUniqueOrThrow',
  'groupBy',
  'aggregate',
  'count',
]);

/**
 * Prisma's dataloader batches the `findUnique` calls of one tick into one query and runs it in
 * the context of the first caller: calls of two requests would then be routed with one
 * request's session. Outside a transaction they run as the equivalent `findFirst` (same `where`,
 * same result, same P2025 error for the OrThrow form), which Prisma never batches.
 */
const UNBATCHED: Readonly<Record<string, string>> = {
  findUnique: 'findFirst',
  findUniqueOrThrow: 'findFirstOrThrow',
};

export interface ReadReplicasOptions {
  /** The router the client's adapter was built over: `PrismaTidemark(router)`. */
  router: RouterOver<unknown>;
}

interface OperationParams<A> {
  readonly args: A;
  readonly model?: string | undefined;
  readonly operation: string;
  readonly query: (args: A) => Promise<unknown>;
}

type Delegates = Record<string, Record<string, (args: unknown) => Promise<unknown>>>;

/** Whether the operation runs inside a `$transaction`: Prisma says so in its internal params only. */
function inTransaction(params: object): boolean {
  const internal = (params as { __internalParams?: { readonly transaction?: unknown } })
    .__internalParams;
  if (internal === null || typeof internal !== 'object') {
    throw new TidemarkPrismaError(
      PrismaErrorCode.PrismaInternals,
      'Prisma did not pass __internalParams to $allOperations (a Prisma version this package does not support), so a transaction cannot be told apart from a single query.',
    );
  }
  return internal.transaction !== undefined && internal.transaction !== null;
}

/**
 * The relation fields of a fluent call (`prisma.order.findUnique(...).items()`): Prisma runs it as
 * the parent's `findUnique` with a nested `select` and a `dataPath` of `select`/`include` and field
 * name pairs, and hands the hooks the data at that path. An unbatched call returns the parent, so
 * it is unpacked the same way here.
 */
function fluentFields(params: object): string[] {
  const path = (params as { __internalParams?: { dataPath?: unknown } }).__internalParams?.dataPath;
  if (path === undefined || (Array.isArray(path) && path.length === 0)) return [];
  const fields: string[] = [];
  if (Array.isArray(path) && path.length % 2 === 0) {
    for (let i = 0; i < path.length; i += 2) {
      const [kind, field] = [path[i], path[i + 1]];
      if ((kind !== 'select' && kind !== 'include') || typeof field !== 'string') break;
      fields.push(field);
    }
    if (fields.length * 2 === path.length) return fields;
  }
  throw new TidemarkPrismaError(
    PrismaErrorCode.PrismaInternals,
    `Prisma passed a dataPath this package does not know (${JSON.stringify(path)}): cannot unpack a fluent findUnique.`,
  );
}

function unpack(data: unknown, fields: readonly string[]): unknown {
  let value = data;
  for (const field of fields) {
    if (value === null || value === undefined) return value;
    value = (value as Record<string, unknown>)[field];
  }
  return value;
}

/** The `$allOperations` hook of a client whose operations go by `route` (`auto`: read or not). */
function routeOperations(client: unknown, route: Route | undefined) {
  const delegates = client as Delegates;
  return <A>(params: OperationParams<A>): Promise<unknown> => {
    const { args, model, operation, query } = params;
    if (inTransaction(params)) return query(args);
    const read = model !== undefined && READ_OPERATIONS.has(operation);
    const chosen: Route = route ?? (read ? 'auto' : 'primary');
    const unbatched = model !== undefined ? UNBATCHED[operation] : undefined;
    // On the primary too: a batch run with another request's session would raise that session,
    // not this one, to what the read saw.
    if (model !== undefined && unbatched !== undefined) {
      const delegate = delegates[model.charAt(0).toLowerCase() + model.slice(1)];
      const run = delegate?.[unbatched];
      if (typeof run !== 'function') {
        throw new TidemarkPrismaError(
          PrismaErrorCode.PrismaInternals,
          `The client has no ${model}.${unbatched}: cannot run ${operation} unbatched.`,
        );
      }
      const fields = fluentFields(params);
      return withRoute(chosen, async () => unpack(await run.call(delegate, args), fields));
    }
    return withRoute(chosen, () => query(args));
  };
}

/**
 * Whether `client` is the `tx` of an interactive transaction: Prisma removes `$connect` (with
 * `$disconnect`, `$on`, `$extends`) from transaction clients. `$transaction` itself is no sign:
 * Prisma 7 keeps it there for nested transactions.
 */
function isTransactionClient(client: object): boolean {
  return typeof (client as { $connect?: unknown }).$connect !== 'function';
}

/**
 * The Tidemark counterpart of `@prisma/extension-read-replicas`, on a client built with
 * `adapter: PrismaTidemark(router)`: model reads (`findMany`, `findFirst`, `findUnique`, `count`,
 * `aggregate`, `groupBy`) go through the router with the request's session (a replica that has
 * the session's writes, else a wait or the primary, by the router's policy); writes, raw queries
 * (`$queryRaw`, `$executeRaw`) and transactions go to the primary. `$primary()` sends everything
 * to the primary, `$replica()` everything through `router.read` (a write there fails on the
 * replica's read-only connection).
 *
 * ```ts
 * const prisma = new PrismaClient({ adapter: PrismaTidemark(router) }).$extends(readReplicas({ router }));
 * ```
 */
export const readReplicas = (options: ReadReplicasOptions) => {
  if (!options || !isTidemarkRouter(options.router)) {
    throw new ConfigError(
      'readReplicas needs { router }: the router the client was built over, with adapter: PrismaTidemark(router).',
    );
  }
  return Prisma.defineExtension((client) => {
    const primary = client.$extends({
      query: { $allOperations: routeOperations(client, 'primary') },
    });
    const replica = client.$extends({
      query: { $allOperations: routeOperations(client, 'replica') },
    });
    return client.$extends({
      client: {
        $primary<T extends object>(this: T): Omit<T, '$primary' | '$replica'> {
          const context = Prisma.getExtensionContext(this);
          // Inside an interactive transaction, the transaction client is already on the primary.
          if (isTransactionClient(context)) {
            return context as unknown as Omit<T, '$primary' | '$replica'>;
          }
          return primary as unknown as Omit<T, '$primary' | '$replica'>;
        },
        $replica<T extends object>(this: T): Omit<T, '$primary' | '$replica'> {
          const context = Prisma.getExtensionContext(this);
          if (isTransactionClient(context)) {
            throw new TidemarkPrismaError(
              PrismaErrorCode.ReplicaInTransaction,
              'Cannot use $replica() inside a transaction: a transaction runs on the primary.',
            );
          }
          return replica as unknown as Omit<T, '$primary' | '$replica'>;
        },
      },
      query: { $allOperations: routeOperations(client, undefined) },
    });
  });
};
