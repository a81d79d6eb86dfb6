import type { Scenario } from '../scenario.js';
import { badTokens } from './bad-tokens.js';
import { boundedWait } from './bounded-wait.js';
import { fallbackCap } from './fallback-cap.js';
import { monotonicReads } from './monotonic-reads.js';
import { pausedReplay } from './paused-replay.js';
import { promotionLostWrite } from './promotion-lost-write.js';
import { replicaKilled } from './replica-killed.js';
import { rywIdle } from './ryw-idle.js';
import { tokenTwoSources } from './token-two-sources.js';

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
];

/**
 * The scenarios named in a comma-separated list (all when the list is empty). Throws, naming the
 * known scenarios, on an unknown name.
 */
export function selectScenarios(text: string | undefined): readonly Scenario[] {
  if (!text?.trim()) return scenarios;
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
  const unknown = names.filter((name) => !scenarios.some((s) => s.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown scenario(s): ${unknown.join(', ')}. Known scenarios: ${scenarios.map((s) => s.name).join(', ')}.`,
    );
  }
  return scenarios.filter((s) => names.includes(s.name));
}

export {
  badTokens,
  boundedWait,
  fallbackCap,
  monotonicReads,
  pausedReplay,
  promotionLostWrite,
  replicaKilled,
  rywIdle,
  tokenTwoSources,
};
