import type { RouteDecision, RouterOptions } from '@tidemark/core';
import { Router } from '@tidemark/core';
import type { Adapter, PositionCodec, ReplicaMonitor } from '@tidemark/core/adapter';
import type { Cluster } from '@tidemark/test-clusters';
import {
  type NaiveOrders,
  type OrderClient,
  type RoutedOrders,
  routedThroughDoor,
} from './front-door.js';
import { NaiveRouter } from './naive.js';
import { type ReadTrace, traceAdapter } from './traced-adapter.js';
import type { AdapterNeeds, ConformanceTarget, Workload } from './types.js';

/** Cluster name the suite's routers write into tokens. */
export const CLUSTER_NAME = 'main';

/** Router options a scenario may set; the adapter and cluster name come from the context. */
export type RouterConfig<P, C> = Omit<RouterOptions<P, C>, 'adapter' | 'cluster'>;

/**
 * `TIDEMARK_SETTLE=immediate|deferred` runs every scenario's router with that `settle` mode, unless
 * the scenario sets one itself (unset: the router's default). An unknown value fails the run.
 */
export function settleFromEnv(
  value: string | undefined = process.env['TIDEMARK_SETTLE'],
): Pick<RouterOptions<unknown, unknown>, 'settle'> {
  if (value === undefined || value === '') return {};
  if (value === 'immediate' || value === 'deferred') return { settle: value };
  throw new Error(`TIDEMARK_SETTLE=${value}: expected immediate or deferred`);
}

/** A router plus what the suite needs to verify its claims. */
export interface RouterHandle<P, C> {
  readonly router: Router<P, C>;
  /** Every read the router handed to its adapter, failed ones included. */
  readonly reads: ReadTrace[];
  readonly codec: PositionCodec<P>;
  /** Every bounded wait the router ran, from its `wait` events. */
  readonly waits: WaitTrace[];
  /** Every routing decision the router announced (`decision` events), in order. */
  readonly decisions: RouteDecision[];
}

/** One bounded wait, as the router reported it. */
export interface WaitTrace {
  readonly replica: string;
  readonly waitedMs: number;
  readonly reached: boolean;
  /** True when the adapter waited server-side (e.g. WAIT FOR LSN), false when the router polled. */
  readonly serverSide: boolean;
}

/** What a scenario gets: the cluster, the target's workload, and tracked routers. */
export interface ScenarioContext<P, C> {
  readonly target: ConformanceTarget<P, C>;
  readonly cluster: Cluster;
  readonly workload: Workload<C>;
  /**
   * A router over a fresh adapter for the cluster's current topology, probed once (ready).
   * `monitorFor` builds the router's monitor over that same adapter (a scenario that drives the
   * monitor's probes itself).
   */
  router(
    config?: RouterConfig<P, C>,
    needs?: AdapterNeeds,
    monitorFor?: (adapter: Adapter<P, C>) => ReplicaMonitor<P>,
  ): Promise<RouterHandle<P, C>>;
  /** The control router over a fresh adapter. */
  naive(): NaiveRouter<P, C>;
  /**
   * Orders written and read through `handle`'s router: with the router's callbacks and the
   * target's workload, or through the target's front door (an ORM over the router).
   */
  orders(handle: RouterHandle<P, C>): Promise<RoutedOrders>;
  /**
   * Orders with no Tidemark: the naive router, or the front door's own replica helper. Where an
   * anomaly exists, this must show it.
   */
  naiveOrders(): Promise<NaiveOrders>;
  /** An adapter for probes only (catch-up checks); rebuilt after topology changes. */
  inspector(): Adapter<P, C>;
  /** A fresh adapter of the target's, closed with the context (the adapter contract's subject). */
  adapter(needs?: AdapterNeeds): Adapter<P, C>;
  /** Forget the inspector so the next call sees the current topology (after a promotion). */
  resetInspector(): Promise<void>;
  /** Unique across the process: order ids and customer ids never collide between scenarios. */
  nextId(): number;
  log(message: string): void;
  /** Close every router, control and adapter this context created. Idempotent. */
  close(): Promise<void>;
}

// Ids start from the clock so reruns on a reused database never hit a duplicate key; the
// product stays below 2^53, so ids survive a round trip through JavaScript numbers.
let idCounter = Date.now() * 100;

export function nextId(): number {
  idCounter += 1;
  return idCounter;
}

export function createContext<P, C>(
  target: ConformanceTarget<P, C>,
  cluster: Cluster,
  log: (message: string) => void,
): ScenarioContext<P, C> {
  const closers: Array<() => Promise<void>> = [];
  let inspector: Adapter<P, C> | undefined;
  const track = (client: OrderClient): OrderClient => {
    closers.push(() => client.close());
    return client;
  };
  return {
    target,
    cluster,
    workload: target.workload,
    async router(config = {}, needs = {}, monitorFor = undefined) {
      const traced = traceAdapter(target.createAdapter(cluster, needs));
      const router = new Router<P, C>({
        ...settleFromEnv(),
        ...config,
        ...(monitorFor ? { monitor: monitorFor(traced.adapter) } : {}),
        adapter: traced.adapter,
        cluster: CLUSTER_NAME,
      });
      closers.push(() => router.close());
      const waits: WaitTrace[] = [];
      router.events.on('wait', ({ replica, waitedMs, reached, serverSide }) => {
        waits.push({ replica, waitedMs, reached, serverSide });
      });
      const decisions: RouteDecision[] = [];
      router.events.on('decision', (decision) => {
        decisions.push(decision);
      });
      await router.ready();
      return { router, reads: traced.reads, codec: traced.adapter.codec, waits, decisions };
    },
    naive() {
      const naive = new NaiveRouter(target.createAdapter(cluster));
      closers.push(() => naive.close());
      return naive;
    },
    async orders(handle) {
      const { workload, frontDoor } = target;
      if (frontDoor) {
        const client = track(await frontDoor.open(handle.router, cluster));
        return routedThroughDoor(handle, client);
      }
      return {
        insertOrder: (session, order) =>
          handle.router.write(session, (c) => workload.insertOrder(c, order)),
        async ordersOf(session, customer) {
          const { value, decision } = await handle.router.readDetailed(session, (c) =>
            workload.ordersOf(c, customer),
          );
          return { ids: value, decision };
        },
      };
    },
    async naiveOrders() {
      const { workload, frontDoor } = target;
      if (frontDoor) {
        const client = track(await frontDoor.openNaive(cluster));
        return {
          insertOrder: (order) => client.insertOrder(order),
          ordersOf: (c) => client.ordersOf(c),
        };
      }
      const naive = new NaiveRouter(target.createAdapter(cluster));
      closers.push(() => naive.close());
      return {
        insertOrder: (order) => naive.write((c) => workload.insertOrder(c, order)),
        ordersOf: async (customer) =>
          (await naive.read((c) => workload.ordersOf(c, customer))).value,
      };
    },
    inspector() {
      if (!inspector) {
        const created = target.createAdapter(cluster);
        inspector = created;
        closers.push(() => created.close());
      }
      return inspector;
    },
    adapter(needs = {}) {
      const created = target.createAdapter(cluster, needs);
      // Closing twice is part of the contract: a scenario may close it first.
      closers.push(() => created.close());
      return created;
    },
    async resetInspector() {
      const old = inspector;
      inspector = undefined;
      await old?.close().catch(() => undefined);
    },
    nextId,
    log,
    async close() {
      const pending = closers.splice(0);
      // Close in reverse order of creation; a failing close must not keep others open.
      await Promise.allSettled(pending.reverse().map((close) => close()));
    },
  };
}
