// Small helpers every scenario uses: orders, checks, waiting for replicas, error codes.
import { ErrorCode, isTidemarkError, type Session } from '@tidemark/core';
import { CLUSTER_NAME, type RouterHandle, type ScenarioContext } from './context.js';
import type { Check, Order } from './types.js';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function check(name: string, pass: boolean, detail: string): Check {
  return { name, pass, detail };
}

/** A new order for `customer` with a unique id. */
export function newOrder<P, C>(ctx: ScenarioContext<P, C>, customer: number, note: string): Order {
  return { id: ctx.nextId(), customer, note };
}

/** The stable code of a Tidemark error, or the error's class name, for counting and messages. */
export function errorCode(error: unknown): string {
  if (isTidemarkError(error)) return error.code;
  if (error instanceof Error) return error.name;
  return typeof error;
}

const ROUTER_CODES = new Set<string>(Object.values(ErrorCode));

/**
 * An error the router raised itself (token, routing, configuration), as opposed to one from the
 * database or from the adapter's read-only connection.
 */
export function isRouterError(error: unknown): boolean {
  return isTidemarkError(error) && ROUTER_CODES.has(error.code);
}

export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** The session's position for the suite's cluster, decoded with the router's codec. */
export function sessionPosition<P, C>(handle: RouterHandle<P, C>, session: Session): P {
  const position = session.position(CLUSTER_NAME, handle.codec);
  if (position === undefined) throw new Error('The session holds no position after a write.');
  return position;
}

/**
 * Poll one replica until it has applied `position` (compared with the adapter's codec).
 * Throws with the last observation when it does not within `timeoutMs`.
 */
export async function waitUntilApplied<P, C>(
  ctx: ScenarioContext<P, C>,
  replica: string,
  position: P,
  timeoutMs = 10_000,
): Promise<void> {
  const adapter = ctx.inspector();
  const deadline = Date.now() + timeoutMs;
  let last = 'no probe answered';
  while (Date.now() < deadline) {
    try {
      const probe = await adapter.probe(replica, {
        signal: AbortSignal.timeout(2000),
        primary: undefined,
      });
      const relation = adapter.codec.compare(probe.applied, position);
      if (relation === 'covered') return;
      last = `${relation}: applied ${adapter.codec.encode(probe.applied)}, need ${adapter.codec.encode(position)}`;
    } catch (error) {
      last = errorText(error);
    }
    await sleep(20);
  }
  throw new Error(
    `Replica ${replica} did not apply the position within ${timeoutMs} ms (${last}).`,
  );
}

/** Wait until every running replica has applied the primary's current position. */
export async function waitForCatchUp<P, C>(
  ctx: ScenarioContext<P, C>,
  timeoutMs = 15_000,
): Promise<void> {
  const adapter = ctx.inspector();
  const primary = await adapter.probePrimary({ signal: AbortSignal.timeout(5000) });
  const running = ctx.cluster.replicas().filter((node) => node.running);
  await Promise.all(running.map((node) => waitUntilApplied(ctx, node.name, primary, timeoutMs)));
}

/** Put a reused cluster back into its normal state: every replica running and replaying. */
export async function restoreCluster<P, C>(ctx: ScenarioContext<P, C>): Promise<void> {
  for (const node of ctx.cluster.replicas()) {
    if (!node.running) await ctx.cluster.start(node.name);
    await ctx.cluster.resumeReplay(node.name);
  }
  await waitForCatchUp(ctx);
}

/** The two replicas every scenario expects (targets start a primary and two replicas). */
export function twoReplicas<P, C>(ctx: ScenarioContext<P, C>): [string, string] {
  const names = ctx.cluster.replicas().map((node) => node.name);
  if (names.length < 2) {
    throw new Error(
      `Target ${ctx.target.name} started ${names.length} replica(s); the suite needs a primary and two replicas.`,
    );
  }
  return [names[0]!, names[1]!];
}

/** Count occurrences, for per-reason and per-code tallies. */
export function tally(values: Iterable<string>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
