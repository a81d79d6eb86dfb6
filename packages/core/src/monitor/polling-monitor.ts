import { PRIMARY, type PrimaryVerdict } from '../adapter.js';
import { type Clock, systemClock } from '../clock.js';
import { ConfigError } from '../errors.js';
import { Emitter } from '../events.js';
import type { PositionCodec } from '../position.js';
import { PrimarySamples } from './primary-samples.js';
import { unrefTimer, withDeadline } from './timers.js';
import type {
  MonitorEvents,
  ProbeContext,
  ProbeResult,
  ProbeSample,
  ReplicaHistory,
  ReplicaMonitor,
  ReplicaState,
} from './types.js';

export interface PollingMonitorOptions<P> {
  codec: PositionCodec<P>;
  /** Replica ids, in the order selection policies see them. */
  replicas: readonly string[];
  probe: (id: string, context: ProbeContext<P>) => Promise<ProbeResult<P>>;
  /**
   * The replica's applied position alone (the adapter's `observe`): settles reads
   * ({@link PollingMonitor.appliedAfter}) and serves {@link PollingMonitor.refreshPosition}, where
   * the full probe would cost more. The background polls keep using `probe`.
   */
  observe?: ((id: string, context: { signal: AbortSignal }) => Promise<P>) | undefined;
  /**
   * Probe of the primary's current position; enables lag bytes, impossible-token checks, and the
   * replica history and staleness checks (invariant 9). Without it replicas are `unchecked`.
   */
  probePrimary?: (context: { signal: AbortSignal }) => Promise<P>;
  /**
   * The adapter's judgement of a position the primary's sample does not cover (see
   * `Adapter.classifyAgainstPrimary`). Used to tell a replica that is merely ahead of an older
   * primary sample (`ok`, `impossible`) from one holding changes the primary never had
   * (`other-history`: diverged). Default: the codec's comparison alone.
   */
  classifyAgainstPrimary?:
    | ((primary: P, applied: P) => PrimaryVerdict | Promise<PrimaryVerdict>)
    | undefined;
  /** See `Adapter.coveredNeedsVerdict`: ask the (synchronous) verdict even when covered. */
  coveredNeedsVerdict?: boolean | undefined;
  /** Time between probes of a healthy replica. Default 200 ms. */
  intervalMs?: number;
  /** A probe slower than this counts as failed. Default 1000 ms. */
  probeTimeoutMs?: number;
  /** Delay before re-probing an unreachable replica; doubles per failure. Default 250 ms. */
  backoffInitialMs?: number;
  /** Cap of the backoff delay. Default 5000 ms. */
  backoffMaxMs?: number;
  /**
   * Asked before each background probe of a node (a replica id, or `primary`): false skips that
   * round (the timer keeps running). A shared replica view answers false while another instance
   * probes and publishes. Probes a read or a wait asks for are never skipped.
   */
  shouldPoll?: ((node: string) => boolean) | undefined;
  clock?: Clock;
}

interface Slot<P> {
  state: ReplicaState<P>;
  timer: ReturnType<typeof setTimeout> | undefined;
  inFlight: Promise<void> | undefined;
  /** Send ticket of the probe in flight. */
  inFlightTicket: number;
  /** Send ticket of the probe behind the current state. */
  sampledTicket: number;
  /** The position-only observation in flight (see PollingMonitorOptions.observe) and its ticket. */
  observing: Promise<boolean> | undefined;
  observingTicket: number;
}

/**
 * Polls every replica on its own timer. Slow or dead replicas back off without delaying the
 * others. The applied position only moves forward within one history (invariant 2): a probe that
 * started before an earlier one finished cannot pull the view back.
 */
export class PollingMonitor<P> implements ReplicaMonitor<P> {
  readonly events = new Emitter<MonitorEvents<P>>();
  private readonly options: Required<
    Omit<
      PollingMonitorOptions<P>,
      | 'probePrimary'
      | 'clock'
      | 'codec'
      | 'replicas'
      | 'probe'
      | 'classifyAgainstPrimary'
      | 'coveredNeedsVerdict'
      | 'shouldPoll'
      | 'observe'
    >
  >;
  private readonly shouldPoll: (node: string) => boolean;
  private readonly codec: PositionCodec<P>;
  private readonly probeFn: PollingMonitorOptions<P>['probe'];
  private readonly observeFn: PollingMonitorOptions<P>['observe'];
  private readonly probePrimaryFn: PollingMonitorOptions<P>['probePrimary'];
  private readonly classify: PollingMonitorOptions<P>['classifyAgainstPrimary'];
  private readonly coveredNeedsVerdict: boolean;
  /** Present when the primary is sampled: the yardstick for history and staleness. */
  private readonly primarySamples: PrimarySamples<P> | undefined;
  private readonly clock: Clock;
  private readonly slots: Slot<P>[];
  private readonly byId = new Map<string, Slot<P>>();
  private snapshot: ReadonlyArray<ReplicaState<P>>;
  private primary: P | undefined;
  private primaryTimer: ReturnType<typeof setTimeout> | undefined;
  /** The latest primary probe in flight and its send ticket. */
  private primaryInFlight: { promise: Promise<P | undefined>; ticket: number } | undefined;
  /** Send ticket of the latest primary probe that answered. */
  private primarySampledTicket = -1;
  /** Probes sent so far: the logical clock behind {@link PollingMonitor.ticket}. */
  private sends = 0;
  private running = false;
  private closed = false;

  constructor(options: PollingMonitorOptions<P>) {
    const intervalMs = options.intervalMs ?? 200;
    const probeTimeoutMs = options.probeTimeoutMs ?? 1000;
    const backoffInitialMs = options.backoffInitialMs ?? 250;
    const backoffMaxMs = options.backoffMaxMs ?? 5000;
    for (const [name, value] of Object.entries({
      intervalMs,
      probeTimeoutMs,
      backoffInitialMs,
      backoffMaxMs,
    })) {
      if (!(Number.isFinite(value) && value > 0)) {
        throw new ConfigError(`monitor ${name} must be a positive number of ms, got ${value}.`);
      }
    }
    if (new Set(options.replicas).size !== options.replicas.length) {
      throw new ConfigError('Replica ids must be unique.');
    }
    this.options = { intervalMs, probeTimeoutMs, backoffInitialMs, backoffMaxMs };
    this.codec = options.codec;
    this.probeFn = options.probe;
    this.observeFn = options.observe;
    this.probePrimaryFn = options.probePrimary;
    this.classify = options.classifyAgainstPrimary;
    this.coveredNeedsVerdict = options.coveredNeedsVerdict ?? false;
    this.shouldPoll = options.shouldPoll ?? (() => true);
    this.primarySamples = options.probePrimary ? new PrimarySamples(options.codec) : undefined;
    this.clock = options.clock ?? systemClock;
    const history: ReplicaHistory = this.primarySamples ? 'unknown' : 'unchecked';
    this.slots = options.replicas.map((id) => ({
      state: {
        id,
        reachable: false,
        applied: undefined,
        lagSeconds: undefined,
        lagBytes: undefined,
        paused: false,
        history,
        behindPrimarySince: undefined,
        sampledAt: Number.NEGATIVE_INFINITY,
        failures: 0,
        lastError: undefined,
      },
      timer: undefined,
      inFlight: undefined,
      inFlightTicket: -1,
      sampledTicket: -1,
      observing: undefined,
      observingTicket: -1,
    }));
    for (const slot of this.slots) this.byId.set(slot.state.id, slot);
    this.snapshot = this.slots.map((s) => s.state);
  }

  states(): ReadonlyArray<ReplicaState<P>> {
    return this.snapshot;
  }

  state(id: string): ReplicaState<P> | undefined {
    return this.byId.get(id)?.state;
  }

  primaryPosition(): P | undefined {
    return this.primary;
  }

  start(): void {
    if (this.running || this.closed) return;
    this.running = true;
    for (const slot of this.slots) this.schedule(slot, 0);
    if (this.probePrimaryFn) this.schedulePrimary(0);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.running = false;
    for (const slot of this.slots) clearTimeout(slot.timer);
    clearTimeout(this.primaryTimer);
    await Promise.allSettled(this.slots.map((s) => s.inFlight));
  }

  async refresh(id?: string): Promise<void> {
    const targets =
      id === undefined ? this.slots : [this.byId.get(id)].filter((s) => s !== undefined);
    await Promise.all(targets.map((slot) => this.probeSlot(slot)));
  }

  /** Always a new probe: its answer is at least the primary's position at the time of the call. */
  refreshPrimary(): Promise<P | undefined> {
    const ticket = ++this.sends;
    const promise = this.probePrimaryOnce(ticket).finally(() => {
      if (this.primaryInFlight?.promise === promise) this.primaryInFlight = undefined;
    });
    this.primaryInFlight = { promise, ticket };
    return promise;
  }

  ticket(): number {
    return this.sends;
  }

  async refreshPosition(id: string): Promise<void> {
    const slot = this.byId.get(id);
    if (!slot) return;
    if (this.observeFn && slot.state.reachable && (await this.observeSlot(slot))) return;
    await this.probeSlot(slot);
  }

  async appliedAfter(id: string, ticket: number): Promise<P> {
    const slot = this.byId.get(id);
    if (!slot) throw new ConfigError(`Unknown replica "${id}".`);
    if (this.observeFn && slot.state.reachable && slot.sampledTicket <= ticket) {
      await this.observedAfter(slot, ticket);
    }
    // At most: the probe in flight (if sent too early) and one more.
    for (let round = 0; round < 3; round++) {
      const state = slot.state;
      if (state.reachable && slot.sampledTicket > ticket && state.applied !== undefined) {
        return state.applied;
      }
      if (slot.inFlight) {
        const lateEnough = slot.inFlightTicket > ticket;
        await slot.inFlight;
        if (lateEnough && !slot.state.reachable) break;
        continue;
      }
      await this.probeSlot(slot);
      if (!slot.state.reachable) break;
    }
    const state = slot.state;
    if (state.reachable && slot.sampledTicket > ticket && state.applied !== undefined) {
      return state.applied;
    }
    throw state.lastError instanceof Error
      ? state.lastError
      : new Error(`Replica "${id}" did not answer a probe.`);
  }

  async primaryAfter(ticket: number): Promise<P> {
    let failure: unknown;
    for (let round = 0; round < 2; round++) {
      if (this.primarySampledTicket > ticket && this.primary !== undefined) return this.primary;
      const inFlight = this.primaryInFlight;
      try {
        // Share a probe sent late enough; otherwise send one (it is late enough by construction).
        await (inFlight && inFlight.ticket > ticket ? inFlight.promise : this.refreshPrimary());
      } catch (error) {
        failure = error;
      }
    }
    if (this.primarySampledTicket > ticket && this.primary !== undefined) return this.primary;
    throw failure instanceof Error ? failure : new Error('The primary did not answer a probe.');
  }

  private async probePrimaryOnce(ticket: number): Promise<P | undefined> {
    if (!this.probePrimaryFn) return this.primary;
    const controller = new AbortController();
    const position = await this.withTimeout(
      this.probePrimaryFn({ signal: controller.signal }),
      controller,
    );
    if (this.closed) return this.primary;
    // Seen when the answer arrived: the primary held this position by then at the latest.
    const seenAt = this.clock.now();
    this.primarySamples?.note(position, seenAt);
    if (this.events.has('primary-probe')) this.events.emit('primary-probe', { position, seenAt });
    this.observePrimary(position);
    this.primarySampledTicket = Math.max(this.primarySampledTicket, ticket);
    // A new yardstick: every replica's history verdict and freshness may have changed.
    for (const slot of this.slots) this.reassess(slot);
    return this.primary;
  }

  observe(id: string, applied: P): void {
    const slot = this.byId.get(id);
    if (!slot) return;
    const current = slot.state.applied;
    if (current !== undefined && this.codec.compare(current, applied) !== 'behind') return;
    // Merge, not replace: a set-shaped position (a GTID set) from one read or wait can be new
    // and still lack what the view already held.
    const next = current === undefined ? applied : this.codec.merge(current, applied);
    this.update(slot, { ...slot.state, applied: next, ...this.judge(slot, next) });
  }

  observePrimary(position: P): void {
    let next = position;
    if (this.primary !== undefined) {
      const relation = this.codec.compare(this.primary, position);
      if (relation === 'covered') return;
      // A write's position may be one GTID: merging keeps the rest of the primary's set.
      next = this.codec.merge(this.primary, position);
    }
    this.primary = next;
    this.events.emit('primary', next);
  }

  reportFailure(id: string, error: unknown): void {
    const slot = this.byId.get(id);
    if (!slot) return;
    this.update(slot, {
      ...slot.state,
      reachable: false,
      failures: slot.state.failures + 1,
      lastError: error,
    });
    // Re-probe soon rather than after a full interval: the failure may have been transient.
    if (this.running && !slot.inFlight) this.schedule(slot, this.backoffDelay(slot.state.failures));
  }

  /**
   * Take a replica sample probed elsewhere (another instance's probe, through a shared replica
   * view), as if this monitor had sent that probe at `sentAt` on its own clock. A sample older
   * than the current one only adds its position (positions never go back); a newer one replaces
   * lag, pause and reachability as a probe would. It settles no {@link appliedAfter} ticket: the
   * order of another process's probes against this one's reads is unknown.
   */
  ingest(sample: ProbeSample<P>): void {
    const slot = this.byId.get(sample.id);
    if (!slot || this.closed) return;
    if ('error' in sample) {
      if (sample.sentAt <= slot.state.sampledAt) return;
      this.update(slot, {
        ...slot.state,
        reachable: false,
        failures: slot.state.failures + 1,
        lastError: sample.error,
      });
      return;
    }
    if (sample.sentAt <= slot.state.sampledAt) {
      this.observe(sample.id, sample.result.applied);
      return;
    }
    this.accept(slot, sample.result, sample.sentAt);
  }

  /** Take a primary position seen elsewhere at `seenAt` (this monitor's clock); see {@link ingest}. */
  ingestPrimary(position: P, seenAt: number): void {
    if (this.closed) return;
    this.primarySamples?.note(position, Math.min(seenAt, this.clock.now()));
    this.observePrimary(position);
    for (const slot of this.slots) this.reassess(slot);
  }

  private schedule(slot: Slot<P>, delayMs: number): void {
    clearTimeout(slot.timer);
    if (!this.running) return;
    slot.timer = setTimeout(() => {
      if (!this.shouldPoll(slot.state.id)) {
        this.schedule(slot, this.options.intervalMs);
        return;
      }
      void this.probeSlot(slot).finally(() => {
        const failures = slot.state.failures;
        this.schedule(slot, failures > 0 ? this.backoffDelay(failures) : this.options.intervalMs);
      });
    }, delayMs);
    unrefTimer(slot.timer);
  }

  private schedulePrimary(delayMs: number): void {
    if (!this.running) return;
    this.primaryTimer = setTimeout(() => {
      if (!this.shouldPoll(PRIMARY)) {
        this.schedulePrimary(this.options.intervalMs);
        return;
      }
      void this.refreshPrimary()
        .catch(() => undefined)
        .finally(() => this.schedulePrimary(this.options.intervalMs));
    }, delayMs);
    unrefTimer(this.primaryTimer);
  }

  private backoffDelay(failures: number): number {
    const exponent = Math.min(failures - 1, 20);
    return Math.min(this.options.backoffMaxMs, this.options.backoffInitialMs * 2 ** exponent);
  }

  /**
   * The position alone settles a read: share an observation sent after `ticket`, or send one. An
   * observation in flight that was sent too early is waited for first (one in flight per
   * replica), then a new one goes out; without this, every read that finished while an
   * observation was on its way paid a full probe (measured at concurrency 16: 2.6 probe calls
   * per Bookstore order instead of 2.2 with probes alone). A failed observation, or one the view
   * cannot take in, leaves the read to the full probe.
   */
  private async observedAfter(slot: Slot<P>, ticket: number): Promise<void> {
    const early = slot.observing;
    if (early && slot.observingTicket <= ticket && !(await early)) return;
    const late = slot.observing;
    if (late && slot.observingTicket > ticket) await late;
    else if (slot.sampledTicket <= ticket) await this.observeSlot(slot);
  }

  /**
   * One position-only observation at a time per replica; concurrent callers share it. True when
   * it raised the view to cover what it saw (the view then answers for its ticket); false when it
   * failed or saw something the view cannot take in as it is (another history: a full probe
   * decides). Never rejects.
   */
  private observeSlot(slot: Slot<P>): Promise<boolean> {
    if (slot.observing) return slot.observing;
    const ticket = ++this.sends;
    slot.observingTicket = ticket;
    const run = async (): Promise<boolean> => {
      const controller = new AbortController();
      let applied: P;
      try {
        applied = await this.withTimeout(
          this.observeFn!(slot.state.id, { signal: controller.signal }),
          controller,
        );
      } catch {
        return false;
      }
      if (this.closed) return false;
      this.observe(slot.state.id, applied);
      const now = slot.state.applied;
      if (now === undefined || this.codec.compare(now, applied) !== 'covered') return false;
      slot.sampledTicket = Math.max(slot.sampledTicket, ticket);
      return true;
    };
    slot.observing = run().finally(() => {
      slot.observing = undefined;
    });
    return slot.observing;
  }

  /** One probe at a time per replica; concurrent callers share the one in flight. */
  private probeSlot(slot: Slot<P>): Promise<void> {
    if (slot.inFlight) return slot.inFlight;
    const startedAt = this.clock.now();
    const ticket = ++this.sends;
    slot.inFlightTicket = ticket;
    const run = async () => {
      const controller = new AbortController();
      try {
        const result = await this.withTimeout(
          this.probeFn(slot.state.id, { signal: controller.signal, primary: this.primary }),
          controller,
        );
        this.accept(slot, result, startedAt);
        slot.sampledTicket = Math.max(slot.sampledTicket, ticket);
        if (this.events.has('probe')) {
          this.events.emit('probe', { id: slot.state.id, sentAt: startedAt, result });
        }
      } catch (error) {
        if (this.closed) return;
        if (this.events.has('probe')) {
          this.events.emit('probe', { id: slot.state.id, sentAt: startedAt, error });
        }
        this.update(slot, {
          ...slot.state,
          reachable: false,
          failures: slot.state.failures + 1,
          lastError: error,
        });
      }
    };
    slot.inFlight = run().finally(() => {
      slot.inFlight = undefined;
    });
    return slot.inFlight;
  }

  private accept(slot: Slot<P>, result: ProbeResult<P>, startedAt: number): void {
    if (this.closed) return;
    const previous = slot.state.applied;
    let applied = result.applied;
    if (previous !== undefined) {
      const relation = this.codec.compare(result.applied, previous);
      if (relation === 'behind') applied = previous;
      else if (relation === 'other-history') {
        this.events.emit('history-change', { id: slot.state.id, previous, next: result.applied });
      }
    }
    this.update(slot, {
      id: slot.state.id,
      reachable: true,
      applied,
      lagSeconds: result.lagSeconds,
      lagBytes: result.lagBytes,
      paused: result.paused ?? false,
      ...this.judge(slot, applied),
      // The sample is as old as the moment the probe was sent, not when its answer arrived.
      sampledAt: startedAt,
      failures: 0,
      lastError: undefined,
    });
  }

  /** Re-judge a replica against the latest primary sample; updates only when something moved. */
  private reassess(slot: Slot<P>): void {
    const applied = slot.state.applied;
    if (applied === undefined) return;
    const judged = this.judge(slot, applied);
    if (
      judged.history !== slot.state.history ||
      judged.behindPrimarySince !== slot.state.behindPrimarySince
    ) {
      this.update(slot, { ...slot.state, ...judged });
    }
  }

  /**
   * History verdict and primary-side freshness of `applied` (invariant 9). Synchronous verdicts
   * apply at once. An asynchronous one (an adapter that must look at the primary) keeps a
   * `current` replica current while it runs, provided the replica only moved forward on its own
   * line, and otherwise leaves it `unknown` (not readable) until the answer arrives.
   */
  private judge(
    slot: Slot<P>,
    applied: P,
  ): { history: ReplicaHistory; behindPrimarySince: number | undefined } {
    const samples = this.primarySamples;
    if (!samples) return { history: 'unchecked', behindPrimarySince: undefined };
    const primary = samples.latest();
    if (primary === undefined) return { history: 'unknown', behindPrimarySince: undefined };
    const behindPrimarySince = samples.behindSince(applied);
    const relation = this.codec.compare(primary, applied);
    if (relation === 'covered' && this.coveredNeedsVerdict && this.classify) {
      let verdict: PrimaryVerdict | Promise<PrimaryVerdict>;
      try {
        verdict = this.classify(primary, applied);
      } catch {
        return { history: 'unknown', behindPrimarySince };
      }
      if (verdict === 'other-history') return { history: 'diverged', behindPrimarySince };
      return { history: 'current', behindPrimarySince };
    }
    if (relation === 'covered') return { history: 'current', behindPrimarySince };
    if (relation === 'other-history') return { history: 'diverged', behindPrimarySince };
    // The replica holds something the primary's sample lacks: an older sample, or changes the
    // primary never had. Only the adapter can tell which.
    if (!this.classify) return { history: 'current', behindPrimarySince };
    let verdict: PrimaryVerdict | Promise<PrimaryVerdict>;
    try {
      verdict = this.classify(primary, applied);
    } catch {
      return { history: 'unknown', behindPrimarySince };
    }
    if (!(verdict instanceof Promise)) {
      return {
        history: verdict === 'other-history' ? 'diverged' : 'current',
        behindPrimarySince,
      };
    }
    const previous = slot.state;
    verdict.then(
      (answer) =>
        this.settleVerdict(slot, applied, answer === 'other-history' ? 'diverged' : 'current'),
      () => this.settleVerdict(slot, applied, 'unknown'),
    );
    const movedForward =
      previous.history === 'current' &&
      previous.applied !== undefined &&
      this.codec.compare(applied, previous.applied) === 'covered';
    return { history: movedForward ? 'current' : 'unknown', behindPrimarySince };
  }

  private settleVerdict(slot: Slot<P>, applied: P, history: ReplicaHistory): void {
    if (this.closed || slot.state.applied !== applied || slot.state.history === history) return;
    this.update(slot, { ...slot.state, history });
  }

  private update(slot: Slot<P>, next: ReplicaState<P>): void {
    const before = slot.state;
    slot.state = next;
    this.snapshot = this.slots.map((s) => s.state);
    this.events.emit('state', next);
    if (before.reachable !== next.reachable) this.events.emit('reachability', next);
    if (before.history !== next.history) {
      this.events.emit('history', { id: next.id, history: next.history, previous: before.history });
    }
  }

  private withTimeout<T>(promise: Promise<T>, controller: AbortController): Promise<T> {
    const timeoutMs = this.options.probeTimeoutMs;
    return withDeadline(
      promise,
      timeoutMs,
      () => new Error(`probe timed out after ${timeoutMs} ms`),
      () => controller.abort(),
    );
  }
}
