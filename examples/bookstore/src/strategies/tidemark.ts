import { type Adapter, Router, Session, TokenCodec } from '@tidemark/core';
import { CLUSTER, type TidemarkSettings } from './tidemark-settings.js';
import type { Strategy, StrategyContext, StrategyRead } from './types.js';

/**
 * Tidemark: each customer's session position travels as an opaque token between requests. A read
 * goes to the replica once it has applied that position, after a bounded wait if needed, else to
 * the primary under the fallback cap. The same code for every database: only the adapter differs.
 */
export async function createTidemarkStrategy<P, C>(
  adapter: Adapter<P, C>,
  context: StrategyContext,
  settings: TidemarkSettings,
): Promise<Strategy<C>> {
  const burst = Math.max(1, settings.fallbackBurst ?? context.plannedReads);
  const mode = settings.mode ?? 'route';
  const router = new Router({
    adapter,
    mode,
    cluster: CLUSTER,
    wait: { budgetMs: settings.waitBudgetMs },
    fallback: { ratePerSecond: settings.fallbackRatePerSecond, burst },
    degraded: 'error',
  });
  try {
    await router.ready();
  } catch (error) {
    await router.close();
    throw error;
  }

  // The demo's "cookie jar": what a web app would send back to each customer's browser.
  const tokens = new TokenCodec();
  const cookies = new Map<number, string>();
  const sessionOf = (customer: number): Session => {
    const cookie = cookies.get(customer);
    return Session.fromToken(cookie === undefined ? undefined : tokens.decode(cookie));
  };
  const remember = async (customer: number, session: Session): Promise<void> => {
    await session.settled();
    if (session.clusters().length > 0) cookies.set(customer, tokens.encode(session.toTokenData()));
  };

  // Calls are sequential (see Strategy), so a wait event belongs to the read in progress.
  let waitedThisRead: number | undefined;
  router.events.on('wait', (event) => {
    waitedThisRead = (waitedThisRead ?? 0) + event.waitedMs;
  });

  return {
    name: mode === 'shadow' ? 'shadow' : 'tidemark',
    async write(customer, fn) {
      const session = sessionOf(customer);
      const value = await router.write(session, fn);
      await remember(customer, session);
      return value;
    },
    async read<T>(customer: number, fn: (connection: C) => Promise<T>) {
      const session = sessionOf(customer);
      waitedThisRead = undefined;
      const { value, decision, prediction } = await router.readDetailed(session, fn);
      await remember(customer, session);
      return {
        value,
        target: decision.target === 'primary' ? 'primary' : 'replica',
        waitedMs: waitedThisRead,
        prediction,
      } satisfies StrategyRead<T>;
    },
    close: () => router.close(),
  };
}
