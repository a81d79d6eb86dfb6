/**
 * The router workloads of the adapters' integration tests, shared by every adapter: rounds of
 * write-then-read through one session (with a plain replica read as the control), and monotonic
 * reads after a first read on an up-to-date replica. Each returns counts; the tests assert on
 * them. Typed structurally so that this harness needs no dependency on the router.
 */
import { eventually } from './wait-for.js';

/** The parts of a Tidemark routing decision the workloads count. */
export interface WorkloadDecision {
  readonly target: string;
  readonly reason: string;
  readonly waitedMs: number;
}

/** The parts of a Tidemark router the workloads use (`Router.readDetailed`). */
export interface WorkloadReadRouter<S, C> {
  readDetailed(
    session: S,
    fn: (connection: C) => Promise<boolean>,
  ): Promise<{ readonly value: boolean; readonly decision: WorkloadDecision }>;
}

export interface ReadYourWritesOptions<S, C> {
  readonly router: WorkloadReadRouter<S, C>;
  /** The router's name for the primary as a read target (core's `PRIMARY`). */
  readonly primary: string;
  /** A new, empty session (`new Session()`). */
  readonly newSession: () => S;
  readonly rounds: number;
  /** The id of the next row to write; called once per round. */
  readonly nextId: () => number;
  /** Write row `id` through the router with `session` (round `round`). */
  readonly write: (session: S, id: number, round: number) => Promise<unknown>;
  readonly hasRow: (connection: C, id: number) => Promise<boolean>;
  /** The control, if any: the same read sent straight to a replica (round `round`), no router. */
  readonly replicaHasRow?: (id: number, round: number) => Promise<boolean>;
}

export interface ReadYourWritesResult {
  /** Router reads right after the session's write that did not see it. */
  readonly missed: number;
  /** Control reads that did not see the write (0 without a control). */
  readonly replicaMissed: number;
  /** Decisions, `primary:<reason>` or `replica:<reason>` -> count. */
  readonly routes: Readonly<Record<string, number>>;
  /** Distinct targets the router read from. */
  readonly targets: readonly string[];
  readonly waitedMs: number;
}

/** The routes of `result` that read a replica. */
export function replicaReads(result: ReadYourWritesResult): number {
  return Object.entries(result.routes)
    .filter(([route]) => route.startsWith('replica:'))
    .reduce((sum, [, count]) => sum + count, 0);
}

/**
 * Each round: a new session writes a new row and reads it back at once through the router; then
 * the control reads it straight from a replica.
 */
export async function runReadYourWrites<S, C>(
  options: ReadYourWritesOptions<S, C>,
): Promise<ReadYourWritesResult> {
  let missed = 0;
  let replicaMissed = 0;
  let waitedMs = 0;
  const routes: Record<string, number> = {};
  const targets = new Set<string>();
  for (let round = 0; round < options.rounds; round++) {
    const id = options.nextId();
    const session = options.newSession();
    await options.write(session, id, round);
    const read = await options.router.readDetailed(session, (c) => options.hasRow(c, id));
    if (!read.value) missed++;
    waitedMs += read.decision.waitedMs;
    targets.add(read.decision.target);
    const route = `${read.decision.target === options.primary ? 'primary' : 'replica'}:${read.decision.reason}`;
    routes[route] = (routes[route] ?? 0) + 1;
    if (options.replicaHasRow && !(await options.replicaHasRow(id, round))) replicaMissed++;
  }
  return { missed, replicaMissed, routes, targets: [...targets], waitedMs };
}

export interface MonotonicReadsOptions<S, C> {
  readonly router: WorkloadReadRouter<S, C>;
  readonly newSession: () => S;
  /** The replica that has the row, and the one whose replay is paused (it never gets it). */
  readonly ahead: string;
  readonly behind: string;
  /** The row someone else wrote on the primary (the session holds no token for it). */
  readonly id: number;
  readonly hasRow: (connection: C, id: number) => Promise<boolean>;
  /** A plain read of one replica, no router: the control on `behind`. */
  readonly replicaHasRow: (replica: string, id: number) => Promise<boolean>;
  /** Reads after the first one. */
  readonly rounds: number;
}

export interface MonotonicReadsResult {
  /** The first read, served by `ahead`, saw the row. */
  readonly firstSaw: boolean;
  /** Later reads of the same session that did not see the row. */
  readonly missed: number;
  /** Later reads routed to `behind`. */
  readonly readBehind: number;
  /** The control: `behind`, read directly, has the row (it must not). */
  readonly behindHasRow: boolean;
}

/**
 * Once a session has read a row on one replica, none of its later reads may go where the row is
 * missing. Waits for `ahead` to have the row, then for a first read the router sends to `ahead`.
 */
export async function runMonotonicReads<S, C>(
  options: MonotonicReadsOptions<S, C>,
): Promise<MonotonicReadsResult> {
  const { router, ahead, behind, id } = options;
  await eventually(`${ahead} to apply row ${id}`, async () =>
    (await options.replicaHasRow(ahead, id)) ? true : undefined,
  );
  const session = options.newSession();
  const first = await eventually('a first read served by the up-to-date replica', async () => {
    const read = await router.readDetailed(session, (c) => options.hasRow(c, id));
    return read.decision.target === ahead ? read : undefined;
  });
  let missed = 0;
  let readBehind = 0;
  for (let round = 0; round < options.rounds; round++) {
    const read = await router.readDetailed(session, (c) => options.hasRow(c, id));
    if (!read.value) missed++;
    if (read.decision.target === behind) readBehind++;
  }
  const behindHasRow = await options.replicaHasRow(behind, id);
  return { firstSaw: first.value, missed, readBehind, behindHasRow };
}
