// The workload through an integration (an ORM or query builder) instead of the router's callback
// API: the same scenarios, the same checks, with the tool's own replica helper as the control.
import { type RouteDecision, type Router, runWithSession, type Session } from '@tidemark/core';
import type { Cluster } from '@tidemark/test-clusters';
import type { RouterHandle } from './context.js';
import type { AnyConformanceTarget, Order } from './types.js';

/**
 * The workload's two operations as an application's query layer runs them. The session is not a
 * parameter: integrations find it the way applications give it to them, the request's session
 * (`runWithSession`), so the suite proves that lookup too.
 */
export interface OrderClient {
  insertOrder(order: Order): Promise<void>;
  /** Ids of the customer's orders, newest first, at most 20. */
  ordersOf(customer: number): Promise<number[]>;
  /** Release what the client opened (pools, ORM clients). The router is not the client's. */
  close(): Promise<void>;
}

/**
 * One integration, written once per tool and SQL flavour, in the integration's own tests. The
 * suite stays free of ORM code; the integration stays free of scenario code.
 */
export interface FrontDoor {
  /** Short name, appended to the target's in report lines: `pg15+drizzle`. */
  readonly name: string;
  /**
   * Schema the door's queries need beyond the workload's own `orders` (created on the primary;
   * the suite waits until the replicas have it). Omit when the door uses the workload's table.
   */
  setup?(cluster: Cluster): Promise<void>;
  /** The tool over the router, as a user would build it. */
  // biome-ignore lint/suspicious/noExplicitAny: doors serve targets of every position and connection type.
  open(router: Router<any, any>, cluster: Cluster): OrderClient | Promise<OrderClient>;
  /**
   * The control: the tool's own replica helper (Drizzle's `withReplicas`, kysely-replication,
   * `@prisma/extension-read-replicas`) over the cluster's nodes. It must show the anomaly.
   */
  openNaive(cluster: Cluster): OrderClient | Promise<OrderClient>;
}

/** A target whose scenarios run through `door`, reported as `<target>+<door>`. */
export function throughFrontDoor(
  target: AnyConformanceTarget,
  door: FrontDoor,
): AnyConformanceTarget {
  return { ...target, name: `${target.name}+${door.name}`, frontDoor: door };
}

/** A read through the scenario's router, with the decision the router made for it. */
export interface RoutedRead {
  readonly ids: number[];
  readonly decision: RouteDecision;
}

/** How a scenario writes and reads orders through its router, whatever the door. */
export interface RoutedOrders {
  insertOrder(session: Session, order: Order): Promise<void>;
  ordersOf(session: Session, customer: number): Promise<RoutedRead>;
}

/** How a scenario writes and reads orders with no Tidemark at all: the control. */
export interface NaiveOrders {
  insertOrder(order: Order): Promise<void>;
  ordersOf(customer: number): Promise<number[]>;
}

/**
 * Orders through a door's client over `handle`'s router. The decision is the last one the router
 * announced while the read ran: scenarios read one at a time, and `ordersOf` is one query.
 */
export function routedThroughDoor<P, C>(
  handle: RouterHandle<P, C>,
  client: OrderClient,
): RoutedOrders {
  return {
    insertOrder: (session, order) => runWithSession(session, () => client.insertOrder(order)),
    async ordersOf(session, customer) {
      const before = handle.decisions.length;
      const ids = await runWithSession(session, () => client.ordersOf(customer));
      const decision = handle.decisions.length > before ? handle.decisions.at(-1) : undefined;
      if (!decision) {
        throw new Error(
          'The read went through the door without a routing decision: the integration did not route it through the router.',
        );
      }
      return { ids, decision };
    },
  };
}
