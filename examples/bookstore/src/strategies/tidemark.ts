import { AsyncLocalStorage } from 'node:async_hooks';
import { Router, Session, TokenCodec } from '@tidemark/core';
import type { Adapter } from '@tidemark/core/adapter';
import { CLUSTER, type TidemarkSettings } from './tidemark-settings.js';
import type { Strategy, StrategyContext, StrategyRead } from './types.js';

/**
 * How the workload's queries reach the router: the raw driver's connection through
 * `router.write` / `router.readDetailed` (the default), or an ORM's front door over the same
 * router (`--via`), whose handle `H` the queries then receive.
 */
export interface FrontDoor<H> {
  write<T>(session: Session, fn: (handle: H) => Promise<T>): Promise<T>;
  /** `target`: where the read ran (`primary` or a replica id). */
  read<T>(
    session: Session,
    fn: (handle: H) => Promise<T>,
  ): Promise<Pick<StrategyRead<T>, 'value' | 'prediction'> & { target: string }>;
  close(): Promise<void>;
}

/** Builds a front door over the strategy's router. */
export type FrontDoorFactory<C, H> = <P>(router: Router<P, C>) => FrontDoor<H>;

/** The raw driver: the callback gets the routed connection itself. */
function driverDoor<P, C>(router: Router<P, C>): FrontDoor<C> {
  return {
    write: (session, fn) => router.write(session, fn),
    async read(session, fn) {
      const { value, decision, prediction } = await router.readDetailed(session, fn);
      return { value, target: decision.target, prediction };
    },
    close: async () => undefined,
  };
}

/**
 * Tidemark: each customer's session position travels as an opaque token between requests. A read
 * goes to the replica once it has applied that position, after a bounded wait if needed, else to
 * the primary under the fallback cap. The same code for every database: only the adapter differs.
 */
export async function createTidemarkStrategy<P, C, H = C>(
  adapter: Adapter<P, C>,
  context: StrategyContext,
  settings: TidemarkSettings,
  door?: FrontDoorFactory<C, H>,
): Promise<Strategy<H>> {
  const burst = Math.max(1, settings.fallbackBurst ?? context.plannedReads);
  const mode = settings.mode ?? 'route';
  const router = new Router({
    adapter,
    mode,
    cluster: CLUSTER,
    wait: {
      budgetMs: settings.waitBudgetMs,
      ...(settings.waitMaxBudgetMs === undefined ? {} : { maxBudgetMs: settings.waitMaxBudgetMs }),
    },
    fallback: { ratePerSecond: settings.fallbackRatePerSecond, burst },
    degraded: 'error',
  });
  context.observeRouter?.(router);
  try {
    await router.ready();
  } catch (error) {
    await router.close();
    throw error;
  }
  const front = (door ? door(router) : driverDoor(router)) as FrontDoor<H>;
  const cookies = new CookieJar();

  // A wait event is emitted inside the read that waited, so the read's async context tells
  // whose it is, also when reads overlap (the fixed-rate benchmark).
  const waitsOfRead = new AsyncLocalStorage<{ waitedMs: number | undefined }>();
  router.events.on('wait', (event) => {
    const read = waitsOfRead.getStore();
    if (read) read.waitedMs = (read.waitedMs ?? 0) + event.waitedMs;
  });

  return {
    name: mode === 'shadow' ? 'shadow' : 'tidemark',
    async write(customer, fn) {
      const session = cookies.session(customer);
      const value = await front.write(session, fn);
      await cookies.remember(customer, session);
      return value;
    },
    async read<T>(customer: number, fn: (handle: H) => Promise<T>) {
      const session = cookies.session(customer);
      const waits = { waitedMs: undefined as number | undefined };
      const { value, target, prediction } = await waitsOfRead.run(waits, () =>
        front.read(session, fn),
      );
      await cookies.remember(customer, session);
      return {
        value,
        target: target === 'primary' ? 'primary' : 'replica',
        waitedMs: waits.waitedMs,
        prediction,
      } satisfies StrategyRead<T>;
    },
    async close() {
      await front.close();
      await router.close();
    },
  };
}

/** The demo's cookie jar: what a web app would send back to each customer's browser. */
class CookieJar {
  private readonly tokens = new TokenCodec();
  private readonly cookies = new Map<number, string>();

  session(customer: number): Session {
    const cookie = this.cookies.get(customer);
    return Session.fromToken(cookie === undefined ? undefined : this.tokens.decode(cookie));
  }

  async remember(customer: number, session: Session): Promise<void> {
    await session.settled();
    if (session.clusters().length > 0) {
      this.cookies.set(customer, this.tokens.encode(session.toTokenData()));
    }
  }
}
