// The MySQL-family targets every provider knows: which flavour of server each one is, and which
// version series the server must report (both from the registry, src/targets.ts).

import { TARGETS } from '../targets.js';
import type { MysqlFlavour } from './dialect.js';

export interface MysqlFamilyTarget {
  readonly flavour: MysqlFlavour;
  /** Major.minor, e.g. '9.7': VERSION() must start with it and a dot. */
  readonly series: string;
}

export const MYSQL_FAMILY = {
  mysql97: { flavour: TARGETS.mysql97.kind, series: TARGETS.mysql97.series },
  mariadb1011: { flavour: TARGETS.mariadb1011.kind, series: TARGETS.mariadb1011.series },
} as const satisfies Record<string, MysqlFamilyTarget>;

export function mysqlFamilyTarget(target: string): MysqlFamilyTarget | undefined {
  return Object.hasOwn(MYSQL_FAMILY, target)
    ? MYSQL_FAMILY[target as keyof typeof MYSQL_FAMILY]
    : undefined;
}
