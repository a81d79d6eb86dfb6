import type { Database, OrderQueries } from '../databases/types.js';
import type { StrategyName } from '../options.js';
import type { TidemarkSettings } from '../strategies/tidemark-settings.js';
import type { Strategy, StrategyContext } from '../strategies/types.js';

/** The ORMs and query builders `--via` runs the workload through. */
export const VIA_NAMES = ['kysely', 'drizzle', 'prisma'] as const;
export type ViaName = (typeof VIA_NAMES)[number];

/**
 * The strategies a front door runs: `naive` is the tool's own replica helper (reads to a
 * replica whatever the session wrote), `tidemark` the Tidemark front door for that tool.
 */
export const VIA_STRATEGIES = ['naive', 'tidemark'] as const satisfies readonly StrategyName[];
export type ViaStrategyName = (typeof VIA_STRATEGIES)[number];

/** One strategy through a tool: the queries are written in the tool, `H` is its handle. */
export interface ViaRun<H> {
  readonly strategy: Strategy<H>;
  readonly queries: OrderQueries<H>;
}

/** What a tool's module needs to build a run on one database. */
export interface ViaInput<C> {
  readonly database: Database<C>;
  readonly context: StrategyContext;
  readonly settings: TidemarkSettings;
}

/** Header line per strategy through a tool. */
export interface ViaTexts {
  readonly naive: string;
  readonly tidemark: string;
}
