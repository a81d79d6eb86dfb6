/**
 * The three read paths the model compares, over the same simulated cluster:
 *
 * - `tidemark`: core's real Router with its default options. Only what a simulation must
 *   replace is replaced: the clock (virtual), the polling monitor's timer (the same
 *   PollingMonitor code, polling on virtual time) and the random source of the default
 *   `balanced` selection (seeded, for reproducible runs).
 * - `tidemark-no-lag-bound`: the same Router with one option changed, the staleness bound of the
 *   health rule lifted (`health: { maxLagSeconds: 3600 }`): what the position mechanism achieves
 *   by itself, without the default's deliberate rule that a replica more than 10 s behind serves
 *   no read at all, token or not. The difference to `tidemark` is what that bound costs.
 * - `naive`: a random replica that is up, tokens ignored (the control: it must show stale reads).
 * - `window-2s`: a session's reads go to the primary for 2 s after its write, to a random
 *   replica that is up otherwise.
 *
 * The baselines are given perfect knowledge of which replicas are up (an ideal health check),
 * so they never fail a read on a dead replica: what they lack is positions, not health checks.
 */
import {
  balanced,
  type CounterPosition,
  PRIMARY,
  ReplicasBehindError,
  type ReplicationSimulator,
  Router,
  Session,
  type SimConnection,
  SimulatedAdapter,
  SimulatedPollingMonitor,
} from './core.js';
import { Random } from './random.js';

export const STRATEGIES = ['tidemark', 'tidemark-no-lag-bound', 'window-2s', 'naive'] as const;
export type StrategyName = (typeof STRATEGIES)[number];

/** Strategies that run core's real Router. */
export function isTidemark(name: StrategyName): boolean {
  return name === 'tidemark' || name === 'tidemark-no-lag-bound';
}

/**
 * `tidemark-no-lag-bound`'s `health.maxLagSeconds`: an hour, far above every regime's lag, so
 * the staleness rule never excludes a replica (the default is 10 s).
 */
export const NO_LAG_BOUND_SECONDS = 3_600;

/** How long `window-2s` sends a session's reads to the primary after its write. */
export const WINDOW_MS = 2_000;

/** One read of the workload. */
export interface ReadRequest {
  /** Sequence number of the session's write (its token), 0 for a session without one. */
  readonly seq: number;
  /** When that write committed (virtual ms); undefined without a token. */
  readonly writtenAt: number | undefined;
}

export interface ReadOutcome {
  /** `primary` or a replica id. */
  readonly target: string;
  /** The sequence number the query saw on its node (everything up to it was visible). */
  readonly observed: number;
  readonly retried: boolean;
}

export interface StrategyRun {
  ready(): Promise<void>;
  /** One write on the primary; resolves to its sequence number. */
  write(): Promise<number>;
  /** Rejects when the read failed; {@link StrategyRun.isCapRejection} tells which way. */
  read(request: ReadRequest): Promise<ReadOutcome>;
  isCapRejection(error: unknown): boolean;
  /** Router waits (virtual ms) so far. */
  readonly waits: number[];
  /** Strategy-specific counters for the JSON output. */
  details(): Record<string, unknown>;
  close(): Promise<void>;
}

/** Query latency of every read, primary or replica: 0.5 ms plus a geometric tail in 0.5 ms steps (mean 1 ms). */
export function readLatency(random: Random): () => number {
  return () => 0.5 + 0.5 * random.geometric(0.5);
}

const query = async (connection: SimConnection) => connection.lastApplied();

export interface StrategySettings {
  /** Tidemark only, diagnostics: `fallback.maxConcurrent`; undefined keeps core's default. */
  readonly fallbackMaxConcurrent: number | undefined;
}

export function createStrategy(
  name: StrategyName,
  simulator: ReplicationSimulator,
  seed: number,
  settings: StrategySettings = { fallbackMaxConcurrent: undefined },
): StrategyRun {
  const adapter = new SimulatedAdapter(simulator, {
    serverSideWait: true,
    readLatencyMs: readLatency(new Random(seed, `latency:${name}`)),
  });
  const random = new Random(seed, `choice:${name}`);
  return isTidemark(name)
    ? tidemark(adapter, random, settings, name === 'tidemark-no-lag-bound')
    : baseline(adapter, random, name === 'window-2s' ? WINDOW_MS : 0);
}

function tidemark(
  adapter: SimulatedAdapter,
  random: Random,
  settings: StrategySettings,
  noLagBound: boolean,
): StrategyRun {
  const clock = adapter.simulator.clock;
  const router = new Router<CounterPosition, SimConnection>({
    adapter,
    clock,
    monitor: new SimulatedPollingMonitor<CounterPosition>({
      codec: adapter.codec,
      replicas: adapter.replicas,
      probe: (id, context) => adapter.probe(id, context),
      probePrimary: (context) => adapter.probePrimary(context),
      clock,
    }),
    // The default policy, with a seeded random source instead of Math.random.
    selection: balanced({ random: random.fn }),
    ...(noLagBound ? { health: { maxLagSeconds: NO_LAG_BOUND_SECONDS } } : {}),
    ...(settings.fallbackMaxConcurrent === undefined
      ? {}
      : { fallback: { maxConcurrent: settings.fallbackMaxConcurrent } }),
  });
  const waits: number[] = [];
  router.events.on('wait', (event) => waits.push(event.waitedMs));
  return {
    waits,
    ready: () => router.ready(),
    async write() {
      const session = new Session();
      await router.write(session, async () => undefined);
      const position = session.position(router.cluster, adapter.codec);
      if (position === undefined) throw new Error('a write left the session without a position');
      return position.seq;
    },
    async read(request) {
      // A request's session, as decoded from its token: the position of its write, or none.
      const session = new Session();
      if (request.seq > 0) {
        session.raise(router.cluster, adapter.codec, adapter.simulator.position(request.seq));
      }
      const { value, decision } = await router.readDetailed(session, query);
      return { target: decision.target, observed: value, retried: decision.retried };
    },
    isCapRejection: (error) => error instanceof ReplicasBehindError,
    details() {
      const metrics = router.metrics();
      return {
        by_reason: Object.fromEntries(
          Object.entries(metrics.byReason).filter(([, count]) => count > 0),
        ),
        waits_reached: metrics.waitsReached,
        probes: adapter.stats.probes,
        ...(settings.fallbackMaxConcurrent === undefined
          ? {}
          : { fallback_max_concurrent: settings.fallbackMaxConcurrent }),
      };
    },
    close: () => router.close(),
  };
}

function baseline(adapter: SimulatedAdapter, random: Random, windowMs: number): StrategyRun {
  const simulator = adapter.simulator;
  const clock = simulator.clock;
  /** A random replica that is up (ideal health check), other than `not`; else the primary. */
  const pick = (not?: string): string => {
    const up = adapter.replicas.filter((id) => id !== not && !simulator.replica(id).crashed);
    return up.length === 0 ? PRIMARY : up[random.int(up.length)]!;
  };
  return {
    waits: [],
    ready: async () => undefined,
    async write() {
      const { position } = await adapter.write(async () => undefined, {});
      if (position === undefined) throw new Error('the simulated adapter always captures');
      return position.seq;
    },
    async read(request) {
      const recent = request.writtenAt !== undefined && clock.now() - request.writtenAt < windowMs;
      const target = recent ? PRIMARY : pick();
      try {
        const { value } = await adapter.read(target, query, {});
        return { target, observed: value, retried: false };
      } catch {
        // The replica went down during the query: once more elsewhere, as a pool would.
        const retry = pick(target);
        const { value } = await adapter.read(retry, query, {});
        return { target: retry, observed: value, retried: true };
      }
    },
    isCapRejection: () => false,
    details: () => ({}),
    close: async () => undefined,
  };
}
