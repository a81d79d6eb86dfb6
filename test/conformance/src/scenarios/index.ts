import { adapterContract } from '../contract.js';
import type { Scenario } from '../scenario.js';
import { badTokens } from './bad-tokens.js';
import { boundedWait } from './bounded-wait.js';
import { fallbackCap } from './fallback-cap.js';
import { historyCheckUnavailable } from './history-check-unavailable.js';
import { lostWriteOldHistoryReplica } from './lost-write-old-history-replica.js';
import { lostWriteReplicaFollows } from './lost-write-replica-follows.js';
import { monotonicReads } from './monotonic-reads.js';
import { pausedReplay } from './paused-replay.js';
import { promotedBehindStaleConfig } from './promoted-behind-stale-config.js';
import { promotionLostWrite } from './promotion-lost-write.js';
import { replicaCutOff } from './replica-cut-off.js';
import { replicaKilled } from './replica-killed.js';
import { rywIdle } from './ryw-idle.js';
import { tokenTwoSources } from './token-two-sources.js';
import { writeAfterFailover } from './write-after-failover.js';

/** Every scenario, in the order the suite runs them. Order does not matter for correctness. */
export const scenarios: readonly Scenario[] = [
  rywIdle,
  pausedReplay,
  monotonicReads,
  boundedWait,
  fallbackCap,
  replicaKilled,
  promotionLostWrite,
  badTokens,
  tokenTwoSources,
  lostWriteOldHistoryReplica,
  lostWriteReplicaFollows,
  historyCheckUnavailable,
  writeAfterFailover,
  promotedBehindStaleConfig,
  replicaCutOff,
];

/**
 * The scenarios that only write and read orders (through `ctx.orders` and `ctx.naiveOrders`),
 * so they run unchanged through an integration (`throughFrontDoor`): read-your-writes at idle
 * and with replay paused, monotonic reads, the fallback cap and both degraded modes.
 */
export const frontDoorScenarios: readonly Scenario[] = [
  rywIdle,
  pausedReplay,
  monotonicReads,
  fallbackCap,
];

/**
 * What a full run runs: the adapter contract (`contract-*`, checks at the adapter's own
 * boundary) first, then the scenarios through the router.
 */
export const allScenarios: readonly Scenario[] = [...adapterContract, ...scenarios];

/** The name that selects the whole adapter contract in TIDEMARK_SCENARIOS. */
export const CONTRACT_GROUP = 'contract';

/**
 * The scenarios named in a comma-separated list (all when the list is empty; `contract` stands
 * for every `contract-*` check). Throws, naming the known scenarios, on an unknown name.
 */
export function selectScenarios(text: string | undefined): readonly Scenario[] {
  if (!text?.trim()) return allScenarios;
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0)
    .flatMap((name) => (name === CONTRACT_GROUP ? adapterContract.map((s) => s.name) : [name]));
  const unknown = names.filter((name) => !allScenarios.some((s) => s.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown scenario(s): ${unknown.join(', ')}. Known scenarios: ${CONTRACT_GROUP} (all of the contract), ${allScenarios.map((s) => s.name).join(', ')}.`,
    );
  }
  return allScenarios.filter((s) => names.includes(s.name));
}

export {
  adapterContract,
  badTokens,
  boundedWait,
  fallbackCap,
  historyCheckUnavailable,
  lostWriteOldHistoryReplica,
  lostWriteReplicaFollows,
  monotonicReads,
  pausedReplay,
  promotedBehindStaleConfig,
  promotionLostWrite,
  replicaCutOff,
  replicaKilled,
  rywIdle,
  tokenTwoSources,
  writeAfterFailover,
};
