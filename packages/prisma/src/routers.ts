import type { Session } from '@tidemark/core';

/**
 * What a front door needs of a `@tidemark/core` Router whose connections are `C` (a
 * `pg.PoolClient` under `@tidemark/pg`, a mysql2 `PoolConnection` under `@tidemark/mysql`):
 * method syntax, so a `Router<P, C>` fits.
 */
export interface RouterOver<C> {
  readonly cluster: string;
  read<T>(session: Session, fn: (connection: C) => Promise<T>): Promise<T>;
  write<T>(
    session: Session,
    fn: (connection: C) => Promise<T>,
    options?: { transaction?: boolean },
  ): Promise<T>;
}

/** Routers given to a driver adapter factory, so `readReplicas({ router })` can tell a mix-up. */
const adapted = new WeakSet<object>();

export function registerRouter(router: object): void {
  adapted.add(router);
}

/** Whether `router` is one that a `PrismaTidemark` adapter was built over. */
export function isTidemarkRouter(router: unknown): router is RouterOver<unknown> {
  return typeof router === 'object' && router !== null && adapted.has(router);
}
