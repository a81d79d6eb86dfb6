// Every target name the harness knows and the kind of database behind it. The providers say
// which of these they can run here (local binaries, images, URLs), each in its own table keyed
// by these names; the names and kinds themselves are only here.

import type { Flavour } from './types.js';

export interface TargetInfo {
  readonly kind: Flavour;
  /** The version series the server must report: a PostgreSQL major, a MySQL/MariaDB major.minor. */
  readonly series?: string;
}

export const TARGETS = {
  pg15: { kind: 'postgres', series: '15' },
  pg18: { kind: 'postgres', series: '18' },
  pg19: { kind: 'postgres', series: '19' },
  mysql97: { kind: 'mysql', series: '9.7' },
  mariadb1011: { kind: 'mariadb', series: '10.11' },
  /** The in-process MongoDB replica-set simulator (no server binary). */
  'mongo-sim': { kind: 'mongo-sim' },
  /** A real MongoDB replica set. */
  mongo: { kind: 'mongo' },
} as const satisfies Record<string, TargetInfo>;

export type TargetName = keyof typeof TARGETS;

/** PostgreSQL targets, in the order tests run them by default. */
export const PG_TARGETS = ['pg15', 'pg18', 'pg19'] as const satisfies readonly TargetName[];

/** MySQL-family targets: MySQL 9.7 and MariaDB 10.11. */
export const MYSQL_TARGETS = ['mysql97', 'mariadb1011'] as const satisfies readonly TargetName[];

export function isTarget(name: string): name is TargetName {
  return Object.hasOwn(TARGETS, name);
}

/** The kind of database a target is, or undefined for a name that is no target. */
export function targetKind(name: string): Flavour | undefined {
  return isTarget(name) ? TARGETS[name].kind : undefined;
}
