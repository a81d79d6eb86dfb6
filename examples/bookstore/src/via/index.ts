import type { Database } from '../databases/types.js';
import type { TidemarkSettings } from '../strategies/tidemark-settings.js';
import type { StrategyContext } from '../strategies/types.js';
import type { ViaName, ViaRun, ViaStrategyName, ViaTexts } from './types.js';

export {
  VIA_NAMES,
  VIA_STRATEGIES,
  type ViaName,
  type ViaStrategyName,
} from './types.js';

/**
 * Build strategy `name` through tool `via` on `database`. Each tool is loaded on demand, so a run
 * without `--via` never loads an ORM. The handle type stays inside: `use` works for any.
 */
export async function withViaRun<C, R>(
  via: ViaName,
  name: ViaStrategyName,
  database: Database<C>,
  context: StrategyContext,
  settings: TidemarkSettings,
  use: <H>(run: ViaRun<H>) => Promise<R>,
): Promise<R> {
  switch (via) {
    case 'kysely': {
      const { createKyselyRun } = await import('./kysely.js');
      return use(await createKyselyRun(name, { database, context, settings }));
    }
    case 'drizzle': {
      const drizzle = await import('./drizzle.js');
      const input = { database, context, settings };
      return database.name === 'pg'
        ? use(await drizzle.createDrizzlePgRun(name, input))
        : use(await drizzle.createDrizzleMysqlRun(name, input));
    }
    case 'prisma': {
      const { createPrismaRun } = await import('./prisma.js');
      return use(await createPrismaRun(name, { database, context, settings }));
    }
  }
}

/** The header line of strategy `name` through `via`. */
export async function viaDescription(via: ViaName, name: ViaStrategyName): Promise<string> {
  const texts: ViaTexts = await (async () => {
    switch (via) {
      case 'kysely':
        return (await import('./kysely.js')).kyselyTexts;
      case 'drizzle':
        return (await import('./drizzle.js')).drizzleTexts;
      case 'prisma':
        return (await import('./prisma.js')).prismaTexts;
    }
  })();
  return texts[name];
}
