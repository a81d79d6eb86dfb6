import type { StrategyName } from '../options.js';
import { createLabRouterStrategy, labRouterDescription } from './lab-router.js';
import { createNaiveStrategy, naiveDescription } from './naive.js';
import { type TidemarkSettings, tidemarkDescription } from './tidemark-settings.js';
import { createTimeWindowStrategy, timeWindowDescription } from './time-window.js';
import type { Strategy, StrategyContext } from './types.js';

export type { Strategy, StrategyContext, StrategyRead } from './types.js';

/** Build one strategy with fresh per-customer session state. */
export async function createStrategy(
  name: StrategyName,
  context: StrategyContext,
  tidemark: TidemarkSettings,
): Promise<Strategy> {
  switch (name) {
    case 'naive':
      return createNaiveStrategy(context);
    case 'time-window':
      return createTimeWindowStrategy(context);
    case 'lab-router':
      return createLabRouterStrategy(context);
    case 'tidemark': {
      // Loaded on demand: the baselines run without @tidemark/pg built.
      const { createTidemarkStrategy } = await import('./tidemark.js');
      return createTidemarkStrategy(context, tidemark);
    }
  }
}

/** One line per strategy for the human header; `plannedReads` as in {@link tidemarkDescription}. */
export function describeStrategy(
  name: StrategyName,
  tidemark: TidemarkSettings,
  plannedReads: string,
): string {
  switch (name) {
    case 'naive':
      return naiveDescription;
    case 'time-window':
      return timeWindowDescription;
    case 'lab-router':
      return labRouterDescription;
    case 'tidemark':
      return tidemarkDescription(tidemark, plannedReads);
  }
}
