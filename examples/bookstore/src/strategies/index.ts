import type { Database } from '../databases/types.js';
import type { StrategyName } from '../options.js';
import { createLabRouterStrategy, labRouterDescription } from './lab-router.js';
import { createNaiveStrategy, naiveDescription } from './naive.js';
import {
  shadowDescription,
  type TidemarkSettings,
  tidemarkDescription,
} from './tidemark-settings.js';
import { createTimeWindowStrategy, timeWindowDescription } from './time-window.js';
import type { Strategy, StrategyContext } from './types.js';

export type { Strategy, StrategyContext, StrategyRead } from './types.js';

/** Build one strategy on `database` with fresh per-customer session state. */
export async function createStrategy<C>(
  name: StrategyName,
  database: Database<C>,
  context: StrategyContext,
  tidemark: TidemarkSettings,
): Promise<Strategy<C>> {
  switch (name) {
    case 'naive':
      return createNaiveStrategy(database, context);
    case 'time-window':
      return createTimeWindowStrategy(database, context);
    case 'lab-router':
      return createLabRouterStrategy(database, context);
    case 'tidemark':
      // The database loads its adapter on demand: the baselines run without it built.
      return database.createTidemarkStrategy(context, tidemark);
    case 'shadow':
      return database.createTidemarkStrategy(context, { ...tidemark, mode: 'shadow' });
  }
}

/** One line per strategy for the human header; `plannedReads` as in {@link tidemarkDescription}. */
export function describeStrategy<C>(
  name: StrategyName,
  database: Database<C>,
  tidemark: TidemarkSettings,
  plannedReads: string,
): string {
  switch (name) {
    case 'naive':
      return naiveDescription;
    case 'time-window':
      return timeWindowDescription;
    case 'lab-router':
      return labRouterDescription(database.lab.rule);
    case 'tidemark':
      return tidemarkDescription(tidemark, plannedReads, database.texts);
    case 'shadow':
      return shadowDescription(tidemark);
  }
}
