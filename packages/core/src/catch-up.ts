import type { Adapter, WaitOutcome } from './adapter.js';
import { afterDue, type Clock } from './clock.js';
import type { ReplicaMonitor } from './monitor/types.js';
import type { PositionCodec } from './position.js';
import { untilAborted } from './until-aborted.js';

/**
 * A watcher waits on the server only while fewer reads than this wait on its replica; from this
 * many on it probes. A server-side wait (WAIT FOR LSN, WAIT_FOR_EXECUTED_GTID_SET,
 * MASTER_GTID_WAIT) is for one position: the watcher waits for the lowest one, wakes the reads it
 * covers the moment the replica applies it, and sends the next wait, one round trip per distinct
 * position, plus a cancel whenever a read with a lower position or an earlier deadline arrives.
 * A probe costs one round trip per interval (1 ms by default) however many reads wait, and
 * answers all of them. With reads arriving at distinct positions, 16 waiters means up to 16
 * re-arms and cancels per catch-up on one connection, where the probe loop sends a flat ~1 per
 * millisecond; below it the exact wake-up of the server-side wait is worth its round trips. 16 is
 * also the router's default fallback concurrency, the number of connections it already budgets
 * for a burst of reads that did not find a caught-up replica.
 */
export const SERVER_SIDE_MAX_WAITERS = 16;

/**
 * How long past its own timeout a server-side wait left running (its reads were served
 * elsewhere) may go unanswered before it is cancelled after all.
 */
const DETACHED_GRACE_MS = 1000;

/**
 * The reason a watcher aborts its own sleeps with (`wake`, `stopGuard`). These signals go to
 * nobody outside the watcher, and `abort()` without a reason builds a DOMException with a stack
 * trace each time: measured as the largest part of a bounded wait's own CPU on PostgreSQL.
 */
const WOKEN = new Error('catch-up watcher woken');

export interface CatchUpWatchersOptions<P> {
  /** Read at call time: an adapter may learn only from its probes that its servers can wait. */
  readonly adapter: Pick<Adapter<P, unknown>, 'waitFor' | 'probeBeforeWaitMs'>;
  readonly codec: PositionCodec<P>;
  readonly monitor: ReplicaMonitor<P>;
  readonly clock: Clock;
  /** Pause between two probes of one replica while reads wait on it. */
  readonly pollIntervalMs: number;
  /** See {@link SERVER_SIDE_MAX_WAITERS}. */
  readonly serverSideMaxWaiters?: number;
}

/** One read waiting for `required` on any of `replicas`. */
export interface CatchUpRequest<P> {
  readonly required: P;
  /** Candidate replicas, best first. */
  readonly replicas: readonly string[];
  /**
   * The candidate on which this read asks for a server-side wait (the least lagged); the others
   * are watched through probes. Undefined: probes only.
   */
  readonly serverSideOn: string | undefined;
  /** Clock time at which the read stops waiting. */
  readonly deadline: number;
  readonly signal?: AbortSignal | undefined;
}

export interface CatchUp {
  /** The first candidate seen to apply the position, or undefined (deadline, abort, close). */
  readonly replica: string | undefined;
  /**
   * How it was seen. `probe`: other candidates probed at the same moment may cover the position
   * too (the caller may spread the read among them); `server-side`: this replica's own wait.
   */
  readonly by: 'probe' | 'server-side' | undefined;
  /** Whether a server-side wait ran on the read's behalf. */
  readonly serverSide: boolean;
}

/** @internal One waiting read, registered with the watcher of each of its candidates. */
export interface Waiter<P> {
  readonly required: P;
  /** Clock time at which the read started waiting. */
  readonly since: number;
  readonly deadline: number;
  readonly serverSideOn: string | undefined;
  readonly watchers: Watcher<P>[];
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
  readonly resolve: (catchUp: CatchUp) => void;
  serverSide: boolean;
  /** Found by a probe; settled with the next flush (see `CatchUpWatchers.flush`). */
  reachedOn: string | undefined;
  done: boolean;
}

const NOT_REACHED = { replica: undefined, by: undefined } as const;

/**
 * Shared catch-up watchers, one per replica. Reads that wait for a replica to apply their
 * position register with the watcher of every candidate replica; each watcher runs one loop for
 * all of its waiters (one probe per interval, or one server-side wait), only while someone
 * waits, and wakes every waiter its replica now covers. A read is answered by whichever of its
 * candidates gets there first, or gives up at its deadline (checked by the loops themselves: no
 * timer per read). Probes go through the monitor, so they also refresh its view for routing.
 */
export class CatchUpWatchers<P> {
  private readonly watchers = new Map<string, Watcher<P>>();
  private readonly maxServerSide: number;
  private reachedByProbe: Waiter<P>[] = [];
  private flushQueued = false;
  private closed = false;

  constructor(readonly options: CatchUpWatchersOptions<P>) {
    this.maxServerSide = options.serverSideMaxWaiters ?? SERVER_SIDE_MAX_WAITERS;
  }

  /** Resolves once a candidate applied the position, or at the deadline / abort / close. */
  wait(request: CatchUpRequest<P>): Promise<CatchUp> {
    const { signal } = request;
    if (
      this.closed ||
      signal?.aborted ||
      request.replicas.length === 0 ||
      request.deadline <= this.options.clock.now()
    ) {
      return Promise.resolve({ ...NOT_REACHED, serverSide: false });
    }
    return new Promise<CatchUp>((resolve) => {
      const waiter: Waiter<P> = {
        required: request.required,
        since: this.options.clock.now(),
        deadline: request.deadline,
        serverSideOn: request.serverSideOn,
        watchers: [],
        signal,
        onAbort: () => this.settle(waiter, undefined, undefined),
        resolve,
        serverSide: false,
        reachedOn: undefined,
        done: false,
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      for (const id of request.replicas) {
        let watcher = this.watchers.get(id);
        if (!watcher) {
          watcher = new Watcher(id, this);
          this.watchers.set(id, watcher);
        }
        waiter.watchers.push(watcher);
        watcher.add(waiter);
      }
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get serverSideMaxWaiters(): number {
    return this.maxServerSide;
  }

  /** Stop every watcher; waiting reads resolve as not reached. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const watcher of this.watchers.values()) {
      for (const waiter of watcher.waiters) this.settle(waiter, undefined, undefined);
      watcher.wake();
      watcher.cancelDetached();
    }
  }

  /** @internal A watcher saw `waiter` covered on its replica. */
  reached(waiter: Waiter<P>, replica: string, by: 'probe' | 'server-side'): void {
    if (waiter.done) return;
    if (by === 'server-side') {
      this.settle(waiter, replica, by);
      return;
    }
    // Settled once what is due now has run, so that candidates probed at the same moment have
    // answered too and the caller's selection policy can spread the reads among them.
    if (waiter.reachedOn !== undefined) return;
    waiter.reachedOn = replica;
    this.reachedByProbe.push(waiter);
    if (!this.flushQueued) {
      this.flushQueued = true;
      void afterDue(this.options.clock).then(() => this.flush());
    }
  }

  /** @internal */
  settle(waiter: Waiter<P>, replica: string | undefined, by: CatchUp['by']): void {
    if (waiter.done) return;
    waiter.done = true;
    for (const watcher of waiter.watchers) {
      // A server-side wait in flight for it counts, even if another candidate answered first.
      if (watcher.waitingOnServer) waiter.serverSide = true;
      watcher.remove(waiter, replica !== undefined && replica !== watcher.id);
    }
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    waiter.resolve({ replica, by, serverSide: waiter.serverSide });
  }

  private flush(): void {
    this.flushQueued = false;
    const batch = this.reachedByProbe;
    this.reachedByProbe = [];
    for (const waiter of batch) this.settle(waiter, waiter.reachedOn, 'probe');
  }
}

/** The loop of one replica: probes, or one server-side wait, for all reads waiting on it. */
class Watcher<P> {
  readonly waiters = new Set<Waiter<P>>();
  running = false;
  /** Waiters that asked for a server-side wait on this replica. */
  private serverSideWanted = 0;
  /** This run found that the replica cannot wait server-side (unsupported, failed). */
  private probesOnly = false;
  /**
   * Wakes the loop from its sleep or cancels its server-side wait. Kept across rounds and
   * replaced only once used (a new controller is not free either), and aborted with
   * {@link WOKEN}: the loop may go round a thousand times a second.
   */
  private interrupt = new AbortController();
  /**
   * Bounds the wait for a probe: resolves at `at`, no later than the earliest deadline. Shared
   * by the rounds until then (a guard that fires early only ends one round's wait for its probe;
   * the next round shares the probe still in flight).
   */
  private guard: { readonly at: number; readonly promise: Promise<void> } | undefined;
  private guardStop: AbortController | undefined;
  /** The server-side wait in flight: its position and when it times out. */
  private serverWait: { readonly target: P; readonly until: number } | undefined;
  /**
   * Cancels the server-side wait left running after its last waiter went (see
   * {@link Watcher.serverSideRound}); at most one per replica.
   */
  private detached: AbortController | undefined;
  /** The last waiter to leave left because another candidate had applied its position. */
  private lastLeftReached = false;
  private earliestDeadline = Number.POSITIVE_INFINITY;
  /** Applied position at the last scan, and whether waiters joined since. */
  private scanned: P | undefined;
  private joined = false;

  constructor(
    readonly id: string,
    private readonly owner: CatchUpWatchers<P>,
  ) {}

  add(waiter: Waiter<P>): void {
    this.waiters.add(waiter);
    if (waiter.serverSideOn === this.id) this.serverSideWanted++;
    this.joined = true;
    if (waiter.deadline < this.earliestDeadline) this.earliestDeadline = waiter.deadline;
    if (!this.running) {
      this.running = true;
      this.probesOnly = false;
      void this.loop();
      return;
    }
    const wait = this.serverWait;
    if (
      wait &&
      (this.waiters.size >= this.owner.serverSideMaxWaiters ||
        waiter.deadline < wait.until ||
        this.owner.options.codec.compare(waiter.required, wait.target) === 'behind')
    ) {
      // The wait in flight would answer this read too late: plan again.
      this.wake();
    }
  }

  get waitingOnServer(): boolean {
    return this.serverWait !== undefined;
  }

  /**
   * `reachedElsewhere`: the waiter leaves because another candidate applied its position, so
   * this replica is likely catching up too (see {@link Watcher.serverSideRound}).
   */
  remove(waiter: Waiter<P>, reachedElsewhere = false): void {
    if (!this.waiters.delete(waiter)) return;
    if (waiter.serverSideOn === this.id) this.serverSideWanted--;
    if (this.waiters.size === 0) {
      this.lastLeftReached = reachedElsewhere;
      this.wake();
    }
  }

  wake(): void {
    this.interrupt.abort(WOKEN);
  }

  /** Cancel the server-side wait left running, if any (close). */
  cancelDetached(): void {
    this.detached?.abort();
    this.detached = undefined;
  }

  private interruptSignal(): AbortSignal {
    if (this.interrupt.signal.aborted) this.interrupt = new AbortController();
    return this.interrupt.signal;
  }

  /** Resolves at the earliest deadline (or a little before it). */
  private deadlineGuard(): Promise<void> {
    const { clock } = this.owner.options;
    const at = this.earliestDeadline;
    const guard = this.guard;
    if (guard && guard.at <= at) return guard.promise;
    this.stopGuard();
    const stop = new AbortController();
    const promise = clock.sleep(at - clock.now(), stop.signal).then(() => {
      if (this.guard?.promise !== promise) return;
      this.guard = undefined;
      this.guardStop = undefined;
    });
    this.guard = { at, promise };
    this.guardStop = stop;
    return promise;
  }

  private stopGuard(): void {
    this.guardStop?.abort(WOKEN);
    this.guardStop = undefined;
    this.guard = undefined;
  }

  private async loop(): Promise<void> {
    try {
      for (;;) {
        this.expire();
        if (this.waiters.size === 0 || this.owner.isClosed) return;
        if (this.serverSideNow()) await this.serverSideRound();
        else await this.probeRound();
      }
    } finally {
      this.stopGuard();
      this.earliestDeadline = Number.POSITIVE_INFINITY;
      this.running = false;
      this.scanned = undefined;
    }
  }

  private serverSideNow(): boolean {
    return (
      // Not when every waiter left is reached and about to be settled: a probe then still shows
      // whether this replica caught up at the same moment (see CatchUpWatchers.reached).
      Number.isFinite(this.earliestDeadline) &&
      !this.probesOnly &&
      this.serverSideWanted > 0 &&
      this.waiters.size < this.owner.serverSideMaxWaiters &&
      this.owner.options.adapter.waitFor !== undefined &&
      this.probedLongEnough()
    );
  }

  /**
   * Has a read that asked for a server-side wait here been watched by probes for the adapter's
   * `probeBeforeWaitMs`? Until then probes answer it (see Adapter.probeBeforeWaitMs).
   */
  private probedLongEnough(): boolean {
    const first = this.owner.options.adapter.probeBeforeWaitMs ?? 0;
    if (!(first > 0)) return true;
    const since = this.owner.options.clock.now() - first;
    for (const waiter of this.waiters) {
      if (
        waiter.serverSideOn === this.id &&
        waiter.reachedOn === undefined &&
        waiter.since <= since
      ) {
        return true;
      }
    }
    return false;
  }

  /**
   * One server-side wait for the lowest position waited for, until the earliest deadline.
   *
   * Cancelling a statement that waits costs its connection (the adapters close it: a running
   * query cannot be stopped otherwise, and MySQL also needs a KILL QUERY from another
   * connection), and the next wait opens a new one. So when the last waiter leaves because
   * another candidate applied its position first (a probe there answered before this wait woke:
   * about half the waits with two replicas measured so), the wait is left to end on the server
   * instead: the replica is catching up, the wait returns within moments, and its connection goes
   * back to the pool. It is still bounded by its own timeout (the earliest deadline when it was
   * sent), one such wait at most per replica, and close cancels it. A waiter that leaves by its
   * deadline or its caller's abort, or a wait that must be planned again for waiters still here,
   * cancels it as before.
   */
  private async serverSideRound(): Promise<void> {
    const { adapter, clock, monitor } = this.owner.options;
    const waitFor = adapter.waitFor!;
    const target = this.lowest();
    const until = this.earliestDeadline;
    const woken = this.interruptSignal();
    const cancel = new AbortController();
    this.serverWait = { target, until };
    const waiting = waitFor(this.id, target, until - clock.now(), { signal: cancel.signal });
    let outcome: Awaited<ReturnType<typeof waitFor>> | undefined;
    try {
      outcome = await untilAborted(waiting, woken);
    } catch (error) {
      if (!(woken.aborted && error === woken.reason)) {
        if (!cancel.signal.aborted) {
          monitor.reportFailure(this.id, error);
          // Probes for the rest of this run; they tell when the replica answers again.
          this.probesOnly = true;
        }
        return;
      }
      // Woken before the server answered: the wait goes on, see below.
      outcome = undefined;
    } finally {
      this.serverWait = undefined;
    }
    if (outcome === undefined) {
      // Left running only when nobody waits any more because another candidate got there.
      if (
        this.waiters.size === 0 &&
        this.lastLeftReached &&
        this.detached === undefined &&
        !this.owner.isClosed
      ) {
        this.detach(waiting, cancel, until);
      } else {
        cancel.abort();
        waiting.catch(() => undefined);
      }
      return;
    }
    if (outcome.outcome === 'unsupported') {
      this.probesOnly = true;
      return;
    }
    for (const waiter of this.waiters) waiter.serverSide = true;
    if (outcome.outcome === 'reached') {
      const applied = outcome.applied ?? target;
      monitor.observe(this.id, applied);
      if (this.onPrimaryHistory()) this.settleCovered(applied, 'server-side');
      // The node's answer put it off the primary's history (or its verdict is pending): probes
      // keep the view current from here, and end the wait only once it is judged current.
      else this.probesOnly = true;
    } else if (outcome.outcome === 'other-history') {
      // Never covered here; probes keep the view current until the waiters go elsewhere.
      this.probesOnly = true;
    }
  }

  /**
   * Let a wait nobody needs any more end on the server; what it saw still updates the view. A
   * server that never answers (cut off by a partition) must not keep the connection: the wait is
   * cancelled {@link DETACHED_GRACE_MS} after its own timeout.
   */
  private detach(waiting: Promise<WaitOutcome<P>>, cancel: AbortController, until: number): void {
    this.detached = cancel;
    const { monitor, clock } = this.owner.options;
    const ended = new AbortController();
    void clock
      .sleep(Math.max(0, until - clock.now()) + DETACHED_GRACE_MS, ended.signal)
      .then(() => {
        if (!ended.signal.aborted) cancel.abort();
      });
    waiting
      .then((outcome) => {
        if (
          outcome.outcome === 'reached' &&
          outcome.applied !== undefined &&
          !cancel.signal.aborted
        ) {
          monitor.observe(this.id, outcome.applied);
        }
      })
      .catch(() => undefined)
      .finally(() => {
        ended.abort();
        if (this.detached === cancel) this.detached = undefined;
      });
  }

  /** One probe through the monitor (shared with its own polling), then a pause. */
  private async probeRound(): Promise<void> {
    const { clock, monitor, codec, pollIntervalMs } = this.owner.options;
    // A slow probe must not keep a read past its deadline: stop listening at the earliest one.
    // The position is all a catch-up needs: the cheap refresh where the monitor has one.
    const probe = (
      monitor.refreshPosition ? monitor.refreshPosition(this.id) : monitor.refresh(this.id)
    ).catch(() => undefined);
    await (Number.isFinite(this.earliestDeadline)
      ? Promise.race([probe, this.deadlineGuard()])
      : probe);
    const state = monitor.state(this.id);
    const applied = state?.reachable ? state.applied : undefined;
    if (
      applied !== undefined &&
      this.onPrimaryHistory() &&
      (this.joined ||
        this.scanned === undefined ||
        codec.compare(this.scanned, applied) !== 'covered')
    ) {
      this.joined = false;
      this.scanned = applied;
      this.settleCovered(applied, 'probe');
    }
    this.expire();
    if (this.waiters.size === 0 || this.owner.isClosed) return;
    await this.pause(Math.min(pollIntervalMs, this.earliestDeadline - clock.now()));
  }

  /**
   * Sleep, unless woken: a waiter that needs a new plan, the last one leaving, close. A ref'd
   * timer: a watcher runs only while reads wait on it, and a read in progress keeps the process
   * alive as its query would.
   */
  private async pause(ms: number): Promise<void> {
    await this.owner.options.clock.sleep(ms, this.interruptSignal());
  }

  /**
   * Only a replica on the primary's history ends a wait (invariant 9). A plan picks healthy
   * replicas, but a wait's own answer can be the first to show that a node left that history: a
   * replica promoted before the app was reconfigured, whose new writes pass a lost write's offset
   * (MariaDB compares one sequence number per domain), "covers" the position it never had.
   */
  private onPrimaryHistory(): boolean {
    const history = this.owner.options.monitor.state(this.id)?.history;
    return history === 'current' || history === 'unchecked';
  }

  private settleCovered(applied: P, by: 'probe' | 'server-side'): void {
    const codec = this.owner.options.codec;
    for (const waiter of this.waiters) {
      if (waiter.reachedOn === undefined && codec.compare(applied, waiter.required) === 'covered') {
        this.owner.reached(waiter, this.id, by);
      }
    }
  }

  /** Let waiters past their deadline go; note the earliest deadline left. */
  private expire(): void {
    const now = this.owner.options.clock.now();
    // Nobody is due before the earliest deadline noted (waiters that left since only make it
    // early, which costs one scan).
    if (now < this.earliestDeadline) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const waiter of this.waiters) {
      if (waiter.reachedOn !== undefined) continue;
      if (waiter.deadline <= now) this.owner.settle(waiter, undefined, undefined);
      else if (waiter.deadline < earliest) earliest = waiter.deadline;
    }
    this.earliestDeadline = earliest;
  }

  /** A lowest position waited for (a minimal one, where positions are only partly ordered). */
  private lowest(): P {
    const codec = this.owner.options.codec;
    let lowest: P | undefined;
    for (const waiter of this.waiters) {
      if (lowest === undefined || codec.compare(lowest, waiter.required) === 'covered') {
        lowest = waiter.required;
      }
    }
    return lowest as P;
  }
}
