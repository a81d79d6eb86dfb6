// Capability sets and the error a cluster throws for an operation it cannot stage.

import { targetKind } from './targets.js';
import { type ClusterCapability, STAGING_CAPABILITIES } from './types.js';

export function capabilitySet(
  ...capabilities: readonly ClusterCapability[]
): ReadonlySet<ClusterCapability> {
  return new Set(capabilities);
}

/** The operation a capability enables, for error messages. */
const OPERATIONS: Record<ClusterCapability, string> = {
  pause: 'pauseReplay',
  kill: 'stop/kill/start',
  promote: 'promote',
  'promote-partial': 'promote with repoint',
  'cut-off': 'cutOff/reconnect',
  freeze: 'freeze/thaw',
  rejoin: 'rejoin',
  'follow-diverged': 'promote re-pointing a replica that holds writes the new primary lacks',
};

/** Throw the error of an operation the cluster does not support (capability missing). */
export function notSupported(
  provider: string,
  capability: ClusterCapability,
  name: string,
  why = '',
): never {
  throw new Error(
    `${OPERATIONS[capability]}('${name}') is not supported by ${provider} (capability '${capability}' missing)${why ? `: ${why}` : ''}`,
  );
}

/** True when `repoint` asks for anything but the default (re-point every running replica). */
export function isPartialRepoint(repoint: readonly string[] | undefined): boolean {
  return repoint !== undefined;
}

/**
 * An implementation of an operation a cluster does not support: rejects with the error of
 * {@link notSupported}. For class fields: `freeze = unsupportedBy('the X provider', 'freeze');`
 */
export function unsupportedBy(
  provider: string,
  capability: ClusterCapability,
  why = '',
): (name: string) => Promise<void> {
  return async (name) => notSupported(provider, capability, name, why);
}

/**
 * What a cluster of our own (local processes or containers) of a target's kind can stage: every
 * staging capability, plus `follow-diverged` where the database lets a replica follow a new
 * primary while it holds writes that primary lacks (MySQL only).
 */
export function ownClusterCapabilities(kind: string): ReadonlySet<ClusterCapability> {
  const byDatabase: ClusterCapability[] = [];
  if (kind === 'mysql') byDatabase.push('follow-diverged');
  return capabilitySet(...STAGING_CAPABILITIES, ...byDatabase);
}

/**
 * What a cluster of `target` started by `provider` will declare, known before starting one (the
 * conformance suite names its not-applicable tests from it). Each cluster class declares its
 * own `capabilities`; the tests of this package check that they agree with this table.
 */
export function providerCapabilities(
  provider: string,
  target: string,
): ReadonlySet<ClusterCapability> {
  if (provider === 'external') return capabilitySet('pause');
  // testcontainers: our own servers in containers, except a real mongod (the original set).
  if (target === 'mongo') return capabilitySet('pause', 'kill', 'promote');
  // Our own processes, containers or the in-process simulator.
  return ownClusterCapabilities(targetKind(target) ?? '');
}
