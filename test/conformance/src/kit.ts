// Small helpers every scenario uses: orders, checks, waiting for replicas, error codes.
import {
  ErrorCode,
  HistoryUnverifiedError,
  isTidemarkError,
  OtherHistoryError,
  PRIMARY,
  Session,
  TokenCodec,
} from '@tidemark/core';
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

/**
 * The Tidemark error in `error` or its `cause` chain: integrations may wrap what the router threw
 * (Drizzle wraps driver errors in a DrizzleQueryError whose cause is the original).
 */
export function tidemarkErrorIn(error: unknown): Error | undefined {
  let current = error;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth++) {
    if (isTidemarkError(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The error's name and message, with its causes (integrations wrap the database's error). */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const text = `${error.name}: ${error.message}`;
  return cause === undefined ? text : `${text} [cause: ${errorText(cause)}]`;
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

// --- Failover topologies -------------------------------------------------------------------

/** True for the router's "another history" error (a lost write's token). */
export function isOtherHistory(error: unknown): boolean {
  return error instanceof OtherHistoryError && error.code === ErrorCode.OtherHistory;
}

/** True for the router's typed, retryable "history could not be verified" error. */
export function isHistoryUnverified(error: unknown): boolean {
  return (
    error instanceof HistoryUnverifiedError &&
    error.code === ErrorCode.HistoryUnverified &&
    error.retryable
  );
}

/** A replica left on the old history after a failover that lost a write it holds. */
export interface OldHistoryTopology {
  /** The crashed primary (killed; listed as a replica of the new one, not running). */
  readonly oldPrimary: string;
  /** The promoted replica: it never had W. */
  readonly newPrimary: string;
  /** The replica left on the old history: it runs, serves reads, and holds W. */
  readonly oldHistoryReplica: string;
  /** W: acknowledged by the old primary, applied by the old-history replica, lost. */
  readonly lost: Order;
  /** The token of the session that wrote W (unsigned suite codec). */
  readonly token: string;
  /** A new session carrying W's token, as the next request of that user would. */
  carried(): Session;
  /** Checks that the topology really is what the scenario needs (W lost, W on the replica). */
  readonly setupChecks: Check[];
}

/**
 * Primary P, replicas R1 and R2. R2 is stopped; W is written (its token kept) and R1 applies
 * it; P is killed (a crash: W exists only on P and R1); R2 is started and promoted with
 * `repoint: []`, so R1 stays a running replica on the old history, holding W, as in the first
 * minutes of a real failover before anyone rebuilds it. Needs `kill` and `promote-partial`.
 *
 * With `follow`, R1 is re-pointed at R2 instead and follows it while keeping W (an operator who
 * re-points every replica without checking them): needs `follow-diverged` too.
 */
export async function stageOldHistoryReplica<P, C>(
  ctx: ScenarioContext<P, C>,
  note: string,
  options: { follow?: boolean } = {},
): Promise<OldHistoryTopology> {
  const { cluster, workload } = ctx;
  const [r1, r2] = twoReplicas(ctx);
  const oldPrimary = cluster.primary().name;
  const tokens = new TokenCodec();

  // MongoDB: a write the primary acknowledges before R2 (stopped) could have it.
  const before = await ctx.router({}, { unreplicatedWrites: true });
  await waitForCatchUp(ctx);
  await cluster.stop(r2);
  const writer = new Session();
  const lost = newOrder(ctx, ctx.nextId(), note);
  await before.router.write(writer, (c) => workload.insertOrder(c, lost));
  await waitUntilApplied(ctx, r1, sessionPosition(before, writer));
  const token = tokens.encode(writer.toTokenData());
  await before.router.close();

  await cluster.kill(oldPrimary);
  await cluster.start(r2);
  await cluster.promote(
    r2,
    options.follow ? { repoint: [r1], keepDiverged: true } : { repoint: [] },
  );
  await ctx.resetInspector();

  const inspector = ctx.inspector();
  const onNew = await inspector.read(PRIMARY, (c) => workload.ordersOf(c, lost.customer), {});
  const onR1 = await inspector.read(r1, (c) => workload.ordersOf(c, lost.customer), {});
  const lostForReal = !onNew.value.includes(lost.id);
  const r1HasW = onR1.value.includes(lost.id);
  const replicas = cluster.replicas().map((n) => `${n.name}${n.running ? '' : ' (down)'}`);
  return {
    oldPrimary,
    newPrimary: r2,
    oldHistoryReplica: r1,
    lost,
    token,
    carried: () => Session.fromToken(tokens.decode(token)),
    setupChecks: [
      check(
        'setup-lost-write-is-lost',
        lostForReal,
        `W ${lostForReal ? 'is absent from' : 'survived on'} the new primary ${r2} (the setup must lose it)`,
      ),
      check(
        'setup-old-history-replica-holds-w',
        r1HasW && ctx.cluster.replicas().some((n) => n.name === r1 && n.running),
        `${r1} ${r1HasW ? 'holds' : 'lacks'} W and is listed as a replica (replicas: ${replicas.join(', ')})`,
      ),
    ],
  };
}

/** Settle a promise within `ms`, else report it as hung (the promise is left to finish). */
export async function within<T>(
  promise: Promise<T>,
  ms: number,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown } | { ok: 'hung' }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settled = promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  const hung = new Promise<{ ok: 'hung' }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: 'hung' }), ms);
  });
  try {
    return await Promise.race([settled, hung]);
  } finally {
    clearTimeout(timer);
  }
}
