/**
 * One run of the model: one strategy, one regime. A discrete-event simulation on the replication
 * simulator's virtual clock: writes and reads arrive in 0.5 ms ticks (Poisson counts), replicas
 * apply the primary's log with the regime's lag, and the strategy routes every read. Afterwards
 * the oracle goes over every read against the recorded ground truth.
 */
import { PRIMARY } from './core.js';
import {
  Commits,
  type OracleInput,
  Outages,
  RecordingSimulator,
  replicaCouldServe,
} from './oracle.js';
import { Random } from './random.js';
import { type ClusterEvent, DEFAULT_JITTER_SIGMA, REPLICAS, type Regime } from './regimes.js';
import { createStrategy, type ReadRequest, type StrategyName } from './strategies.js';

export interface ModelOptions {
  readonly seed: number;
  /** Measured window, virtual ms (reads arrive only in it). */
  readonly durationMs: number;
  /** Writes only, before the window: history for older tokens, replicas settled into their lag. */
  readonly warmupMs: number;
  readonly readsPerSecond: number;
  readonly writesPerSecond: number;
  /** Share of reads whose session wrote within `freshMaxAgeMs` (its token is that write's). */
  readonly freshTokenShare: number;
  readonly freshMaxAgeMs: number;
  /** Share of reads carrying an older token: age log-uniform in `olderTokenAgeMs`. */
  readonly olderTokenShare: number;
  readonly olderTokenAgeMs: readonly [number, number];
  /** Time grid of arrivals, query latencies and replica lags, virtual ms. */
  readonly tickMs: number;
  /** Sigma of the lognormal jitter of replica lags (redrawn every 500 ms); 0: none. */
  readonly lagJitterSigma: number;
  /**
   * A diagnostic departure from the Router's defaults: its `fallback.maxConcurrent`. Undefined
   * (the default): core's own default.
   */
  readonly fallbackMaxConcurrent: number | undefined;
}

export const DEFAULT_OPTIONS: ModelOptions = {
  seed: 1,
  durationMs: 60_000,
  warmupMs: 35_000,
  readsPerSecond: 20_000,
  writesPerSecond: 1_000,
  freshTokenShare: 0.15,
  freshMaxAgeMs: 1_000,
  olderTokenShare: 0.15,
  olderTokenAgeMs: [1_000, 30_000],
  tickMs: 0.5,
  lagJitterSigma: DEFAULT_JITTER_SIGMA,
  fallbackMaxConcurrent: undefined,
};

/** Core's default `wait.budgetMs`: the oracle lets a read wait this long for a replica. */
export const WAIT_BUDGET_MS = 250;
/** Core's default `health.maxLagSeconds`, for the policy oracle (invariant 9). */
export const MAX_LAG_SECONDS = 10;
/** Tidemark's target: leader reads at most this factor of the oracle's. */
export const TARGET_FACTOR = 1.05;
/** When the oracle needs no leader read at all: "near zero" is at most this many per 1k reads. */
export const NEAR_ZERO_PER_1K = 1;

export interface ModelResult {
  readonly strategy: StrategyName;
  readonly regime: string;
  /** Nominal lag of a steady regime, null for incident regimes. */
  readonly lag_ms: number | null;
  readonly seed: number;
  readonly simulated_s: number;
  /** The run's options (the workload and the cluster's), so saved output describes itself. */
  readonly options: ModelOptions;
  /** Reads that arrived in the measured window. */
  readonly reads: number;
  readonly token_reads: number;
  /** Reads served by the primary. */
  readonly leader_reads: number;
  readonly leader_per_1k: number;
  /** Reads no replica could have served: no replica that was up had applied the session's write, or applied it within the wait budget. */
  readonly oracle_leader_reads: number;
  readonly oracle_per_1k: number;
  /** leader_reads / oracle_leader_reads; null when the oracle is 0 (see leader_per_1k). */
  readonly leader_vs_oracle: number | null;
  /** Leader reads the oracle says a replica could have served. */
  readonly avoidable_leader_reads: number;
  /** The oracle also honouring health.maxLagSeconds (10 s): replicas staler than that cannot serve. */
  readonly policy_oracle_leader_reads: number;
  readonly leader_vs_policy_oracle: number | null;
  readonly primary_share: number;
  readonly waits: number;
  readonly wait_p50_ms: number | null;
  readonly wait_p99_ms: number | null;
  /** Reads that missed their session's own write. */
  readonly stale_reads: number;
  /** Reads that failed (cap rejections included). */
  readonly errors: number;
  readonly cap_rejections: number;
  readonly retried: number;
  readonly latency_p50_ms: number | null;
  readonly latency_p99_ms: number | null;
  /** Leader reads within 5% of the oracle (near zero when it is 0), no stale read, no error. */
  readonly target_met: boolean;
  readonly details: Record<string, unknown>;
  /** Real time the run took, and the CPU time (user + system) of the process meanwhile. */
  readonly runtime_ms: number;
  readonly cpu_ms: number;
}

const OUTCOME_PENDING = 0;
const OUTCOME_REPLICA = 1;
const OUTCOME_PRIMARY = 2;
const OUTCOME_ERROR = 3;

export async function runModel(
  strategyName: StrategyName,
  regime: Regime,
  overrides: Partial<ModelOptions> = {},
): Promise<ModelResult> {
  const options = { ...DEFAULT_OPTIONS, ...overrides };
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const window = { startMs: options.warmupMs, endMs: options.warmupMs + options.durationMs };
  const simulator = new RecordingSimulator({
    replicas: REPLICAS.map((id) => ({ id })),
    maxVirtualMs: window.endMs + 600_000,
  });
  const clock = simulator.clock;
  const outages = new Outages();
  const commits = new Commits();
  const events = regime.plan({
    seed: options.seed,
    ...window,
    jitterSigma: options.lagJitterSigma,
    tickMs: options.tickMs,
  });
  const apply = (event: ClusterEvent) => {
    if (event.kind === 'lag') simulator.setLag(event.replica, event.lagMs);
    else if (event.kind === 'crash') {
      simulator.crash(event.replica);
      outages.crash(event.replica, clock.now());
    } else {
      simulator.restart(event.replica);
      outages.restart(event.replica, clock.now());
    }
  };
  const strategy = createStrategy(strategyName, simulator, options.seed, {
    fallbackMaxConcurrent: options.fallbackMaxConcurrent,
  });
  const workload = new Random(options.seed, 'workload');

  const arrivals: number[] = [];
  const required: number[] = [];
  const outcomes: number[] = [];
  const latencies: number[] = [];
  const errorKinds: Record<string, number> = {};
  let stale = 0;
  let capRejections = 0;
  let retried = 0;
  let inFlight = 0;

  const launch = (request: ReadRequest) => {
    const index = arrivals.length;
    const at = clock.now();
    arrivals.push(at);
    required.push(request.seq);
    outcomes.push(OUTCOME_PENDING);
    inFlight++;
    strategy
      .read(request)
      .then(
        (outcome) => {
          outcomes[index] = outcome.target === PRIMARY ? OUTCOME_PRIMARY : OUTCOME_REPLICA;
          if (outcome.observed < request.seq) stale++;
          if (outcome.retried) retried++;
          latencies.push(clock.now() - at);
        },
        (error: unknown) => {
          outcomes[index] = OUTCOME_ERROR;
          if (strategy.isCapRejection(error)) capRejections++;
          const kind = (error as { code?: string }).code ?? (error as Error).name ?? 'unknown';
          errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
        },
      )
      .finally(() => {
        inFlight--;
      });
  };

  const readsPerTick = (options.readsPerSecond * options.tickMs) / 1000;
  const writesPerTick = (options.writesPerSecond * options.tickMs) / 1000;
  const nextRequest = (): ReadRequest => {
    const u = workload.next();
    let age: number | undefined;
    if (u < options.freshTokenShare) age = workload.uniform(0, options.freshMaxAgeMs);
    else if (u < options.freshTokenShare + options.olderTokenShare) {
      age = workload.logUniform(options.olderTokenAgeMs[0], options.olderTokenAgeMs[1]);
    }
    if (age === undefined) return NO_TOKEN;
    const seq = commits.seqAt(clock.now() - age);
    // Not enough history yet (a short warm-up): the session has no write to carry.
    return seq === 0 ? NO_TOKEN : { seq, writtenAt: commits.times[seq - 1] };
  };

  for (const event of events) if (event.atMs <= 0) apply(event);
  await simulator.run(async () => {
    await strategy.ready();
    const cluster = (async () => {
      for (const event of events) {
        if (event.atMs <= 0) continue;
        await clock.sleep(event.atMs - clock.now());
        apply(event);
      }
    })();
    for (let tick = 0; tick * options.tickMs < window.endMs; tick++) {
      const at = tick * options.tickMs;
      const writes = workload.poisson(writesPerTick);
      const reads = at >= window.startMs ? workload.poisson(readsPerTick) : 0;
      if (writes === 0 && reads === 0) continue;
      await clock.sleep(at - clock.now());
      // Concurrent writes commit in the order they started (the simulator's clock is FIFO).
      const committed = await Promise.all(Array.from({ length: writes }, () => strategy.write()));
      if (clock.now() !== at) throw new Error(`writes of ${at} ms committed at ${clock.now()} ms`);
      for (const seq of committed.sort((x, y) => x - y)) commits.add(seq, at);
      for (let i = 0; i < reads; i++) launch(nextRequest());
    }
    // Run on past the window for at least the wait budget, whatever the strategy: the oracle
    // needs the replicas' progress up to the last read's arrival plus the budget.
    await clock.sleep(window.endMs + WAIT_BUDGET_MS - clock.now());
    while (inFlight > 0) await clock.sleep(options.tickMs);
    await cluster;
    await strategy.close();
  });

  // The oracle, read by read, against the recorded ground truth.
  const oracle: OracleInput = {
    replicas: REPLICAS,
    timelines: new Map(REPLICAS.map((id) => [id, simulator.timeline(id)])),
    outages,
    commits,
    budgetMs: WAIT_BUDGET_MS,
  };
  const policyOracle: OracleInput = { ...oracle, maxLagSeconds: MAX_LAG_SECONDS };
  let oracleLeader = 0;
  let policyLeader = 0;
  let leader = 0;
  let avoidable = 0;
  let errors = 0;
  let tokenReads = 0;
  for (let i = 0; i < arrivals.length; i++) {
    const at = arrivals[i]!;
    const seq = required[i]!;
    if (seq > 0) tokenReads++;
    const needsLeader = !replicaCouldServe(oracle, at, seq);
    if (needsLeader) oracleLeader++;
    if (!replicaCouldServe(policyOracle, at, seq)) policyLeader++;
    const outcome = outcomes[i]!;
    if (outcome === OUTCOME_PRIMARY) {
      leader++;
      if (!needsLeader) avoidable++;
    } else if (outcome === OUTCOME_ERROR) errors++;
    else if (outcome === OUTCOME_PENDING) throw new Error(`read ${i} never finished`);
  }

  const reads = arrivals.length;
  const per1k = (count: number) => (reads === 0 ? 0 : (count * 1000) / reads);
  const ratio = (count: number, of: number) => (of === 0 ? null : count / of);
  const waits = Float64Array.from(strategy.waits).sort();
  const sortedLatencies = Float64Array.from(latencies).sort();
  const leaderOk =
    oracleLeader === 0 ? per1k(leader) <= NEAR_ZERO_PER_1K : leader <= TARGET_FACTOR * oracleLeader;
  return {
    strategy: strategyName,
    regime: regime.name,
    lag_ms: regime.lagMs ?? null,
    seed: options.seed,
    simulated_s: options.durationMs / 1000,
    options,
    reads,
    token_reads: tokenReads,
    leader_reads: leader,
    leader_per_1k: round(per1k(leader)),
    oracle_leader_reads: oracleLeader,
    oracle_per_1k: round(per1k(oracleLeader)),
    leader_vs_oracle: roundOrNull(ratio(leader, oracleLeader)),
    avoidable_leader_reads: avoidable,
    policy_oracle_leader_reads: policyLeader,
    leader_vs_policy_oracle: roundOrNull(ratio(leader, policyLeader)),
    primary_share: round(reads === 0 ? 0 : leader / reads, 4),
    waits: waits.length,
    wait_p50_ms: roundOrNull(quantile(waits, 0.5)),
    wait_p99_ms: roundOrNull(quantile(waits, 0.99)),
    stale_reads: stale,
    errors,
    cap_rejections: capRejections,
    retried,
    latency_p50_ms: roundOrNull(quantile(sortedLatencies, 0.5)),
    latency_p99_ms: roundOrNull(quantile(sortedLatencies, 0.99)),
    target_met: leaderOk && stale === 0 && errors === 0,
    details: {
      ...strategy.details(),
      ...(errors > 0 ? { error_kinds: errorKinds } : {}),
    },
    runtime_ms: Math.round(performance.now() - started),
    cpu_ms: Math.round(cpuMs(process.cpuUsage(cpuBefore))),
  };
}

const NO_TOKEN: ReadRequest = { seq: 0, writtenAt: undefined };

function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}

/** Nearest-rank quantile of sorted values; null when there are none. */
export function quantile(sorted: Float64Array, q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

function round(value: number, digits = 3): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

function roundOrNull(value: number | null): number | null {
  return value === null ? null : round(value);
}
