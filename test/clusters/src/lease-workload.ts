/**
 * The write-then-read workload of the lease integration tests, shared by every adapter: each
 * round writes a new row through a write lease and reads it back at once through a read lease of
 * the same session, next to two controls that must miss while replicas lag: a read lease of a
 * session without the token (the token discarded) and a plain replica read. Typed structurally so
 * that this harness needs no dependency on the router.
 */

/** The parts of a Tidemark lease the workload uses. */
export interface WorkloadLease<C> {
  readonly connection: C;
  readonly target: string;
  readonly reason: string;
  release(error?: unknown): Promise<void>;
}

/** The parts of a Tidemark router the workload uses (`Router.acquire`). */
export interface WorkloadLeaseRouter<S, C> {
  acquire(session: S, kind: 'read' | 'write'): Promise<WorkloadLease<C>>;
}

export interface LeaseWorkloadOptions<S, C> {
  readonly router: WorkloadLeaseRouter<S, C>;
  /** A new, empty session (`new Session()`). */
  readonly newSession: () => S;
  readonly rounds: number;
  /** Ids of the rows written are `firstId`, `firstId + 1`, ... */
  readonly firstId: number;
  readonly insert: (connection: C, id: number) => Promise<unknown>;
  readonly hasRow: (connection: C, id: number) => Promise<boolean>;
  /** The control: the same read sent straight to a replica (round `round`), no router. */
  readonly replicaHasRow: (id: number, round: number) => Promise<boolean>;
}

export interface LeaseWorkloadResult {
  readonly rounds: number;
  /** Read leases of the writing session that did not see its own write. */
  readonly missed: number;
  /** Read leases of a session without the token that did not see the write. */
  readonly tokenDiscardedMissed: number;
  /** Plain replica reads that did not see the write. */
  readonly replicaMissed: number;
  /** Read lease targets and reasons, `target:reason` -> count. */
  readonly routes: Readonly<Record<string, number>>;
}

/** Release `lease` after `work`, passing work's error along (rethrown). */
async function using<C, T>(
  lease: WorkloadLease<C>,
  work: (connection: C) => Promise<T>,
): Promise<T> {
  let value: T;
  try {
    value = await work(lease.connection);
  } catch (error) {
    await lease.release(error);
    throw error;
  }
  await lease.release();
  return value;
}

/** Run the rounds; see the module comment. Rounds run one at a time. */
export async function runLeaseWorkload<S, C>(
  options: LeaseWorkloadOptions<S, C>,
): Promise<LeaseWorkloadResult> {
  const { router } = options;
  let missed = 0;
  let tokenDiscardedMissed = 0;
  let replicaMissed = 0;
  const routes: Record<string, number> = {};
  for (let round = 0; round < options.rounds; round++) {
    const id = options.firstId + round;
    const session = options.newSession();
    await using(await router.acquire(session, 'write'), (c) => options.insert(c, id));
    // The controls run alongside the session's read, right after the write, as a naive router's
    // read would: run after it, they would find replicas that had caught up in the meantime.
    const [seen, blindSeen, replicaSeen] = await Promise.all([
      router.acquire(session, 'read').then((read) => {
        const key = `${read.target}:${read.reason}`;
        routes[key] = (routes[key] ?? 0) + 1;
        return using(read, (c) => options.hasRow(c, id));
      }),
      router
        .acquire(options.newSession(), 'read')
        .then((blind) => using(blind, (c) => options.hasRow(c, id))),
      options.replicaHasRow(id, round),
    ]);
    if (!seen) missed++;
    if (!blindSeen) tokenDiscardedMissed++;
    if (!replicaSeen) replicaMissed++;
  }
  return { rounds: options.rounds, missed, tokenDiscardedMissed, replicaMissed, routes };
}
