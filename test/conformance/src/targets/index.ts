import type { TargetName } from '@tidemark/test-clusters';
import type { AnyConformanceTarget } from '../types.js';

/**
 * Every known target, loaded lazily: a PostgreSQL run imports only the pg adapter, so other
 * adapters' drivers (mysql2, mongodb) need not be installed. Add a line per new target: the
 * names are those of the harness's registry (test/clusters/src/targets.ts), one line each.
 */
export const targets: Record<string, () => Promise<AnyConformanceTarget>> = {
  pg15: async () => (await import('./pg.js')).pgTarget('pg15'),
  pg18: async () => (await import('./pg.js')).pgTarget('pg18'),
  pg19: async () => (await import('./pg.js')).pgTarget('pg19'),
  mysql97: async () => (await import('./mysql.js')).mysqlTarget(),
  mariadb1011: async () => (await import('./mysql.js')).mariadbTarget(),
  'mongo-sim': async () => (await import('./mongo.js')).mongoSimTarget(),
  mongo: async () => (await import('./mongo.js')).realMongoTarget(),
} satisfies Record<TargetName, () => Promise<AnyConformanceTarget>>;

/**
 * The targets the suite runs when TIDEMARK_TARGETS is unset or empty, as that variable spells
 * them (not the harness's DEFAULT_TARGETS, which lists its PostgreSQL targets).
 */
export const DEFAULT_TARGETS = 'pg15';

/**
 * Parse a comma-separated target list. Throws, naming the known targets, when a name is
 * unknown: a typo must never turn into a silently skipped target.
 */
export function parseTargetList(text: string | undefined): string[] {
  const names = (text?.trim() ? text : DEFAULT_TARGETS)
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
  const unknown = names.filter((name) => !Object.hasOwn(targets, name));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown conformance target(s): ${unknown.join(', ')}. Known targets: ${Object.keys(targets).join(', ')}. Set TIDEMARK_TARGETS to a comma-separated list of those.`,
    );
  }
  if (names.length === 0) throw new Error('TIDEMARK_TARGETS names no target.');
  return [...new Set(names)];
}

export async function loadTarget(name: string): Promise<AnyConformanceTarget> {
  const load = targets[name];
  if (!load) throw new Error(`Unknown conformance target ${name}.`);
  return load();
}
