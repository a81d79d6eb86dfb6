/**
 * Schedules for the replication simulator and the fast-check arbitraries that generate them.
 * A schedule is plain data (so fast-check can shrink and print it): the cluster's shape, the
 * faults that hit it over virtual time, the router's settings, and what each session does.
 */
import fc from 'fast-check';

export type SessionStep =
  | { readonly kind: 'write' }
  | { readonly kind: 'read' }
  | { readonly kind: 'think'; readonly ms: number };

export type ClusterEvent =
  | {
      readonly atMs: number;
      readonly kind: 'lag';
      readonly replica: number;
      readonly lagMs: number;
    }
  | {
      readonly atMs: number;
      readonly kind: 'pause';
      readonly replica: number;
      readonly forMs: number;
      /** Whether probes report the pause (replay pause) or not (a stuck applier). */
      readonly reported: boolean;
    }
  | {
      readonly atMs: number;
      readonly kind: 'crash';
      readonly replica: number;
      readonly forMs: number;
    };

export type SelectionSetting = 'balanced' | 'least-lag' | 'round-robin' | 'random' | 'affinity';

export interface RouterSettings {
  /** 0 disables waiting. */
  readonly waitBudgetMs: number;
  readonly pollIntervalMs: number;
  readonly fallbackEnabled: boolean;
  readonly burst: number;
  readonly ratePerSecond: number;
  readonly degraded: 'error' | 'stale';
  readonly selection: SelectionSetting;
  readonly maxLagSeconds: number;
  /** Undefined: the router's default (derived from the monitor interval). */
  readonly maxSampleAgeMs: number | undefined;
  readonly monitorIntervalMs: number;
}

export interface Schedule {
  /** Seeds the latencies and the `random` selection policy, so a schedule replays exactly. */
  readonly seed: number;
  /** Initial apply lag of each replica, in virtual ms; its length is the replica count. */
  readonly replicaLagsMs: readonly number[];
  /** Adapter offers a server-side wait (else the router polls probes). */
  readonly serverSideWait: boolean;
  readonly maxReadLatencyMs: number;
  readonly maxCommitLatencyMs: number;
  /** Carry each session through a signed token between its requests, as a web app would. */
  readonly tokenRoundTrip: boolean;
  readonly router: RouterSettings;
  readonly sessions: ReadonlyArray<ReadonlyArray<SessionStep>>;
  readonly events: readonly ClusterEvent[];
}

const lagMs = fc.oneof(fc.constantFrom(0, 1, 5, 20, 50, 120), fc.integer({ min: 0, max: 400 }));

const sessionStep: fc.Arbitrary<SessionStep> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<SessionStep>({ kind: 'write' }) },
  { weight: 4, arbitrary: fc.constant<SessionStep>({ kind: 'read' }) },
  {
    weight: 2,
    arbitrary: fc.integer({ min: 0, max: 150 }).map((ms): SessionStep => ({ kind: 'think', ms })),
  },
);

const clusterEvent: fc.Arbitrary<ClusterEvent> = fc.oneof(
  fc.record({
    atMs: fc.integer({ min: 0, max: 1500 }),
    kind: fc.constant('lag' as const),
    replica: fc.nat(7),
    lagMs,
  }),
  fc.record({
    atMs: fc.integer({ min: 0, max: 1500 }),
    kind: fc.constant('pause' as const),
    replica: fc.nat(7),
    forMs: fc.integer({ min: 1, max: 800 }),
    reported: fc.boolean(),
  }),
  fc.record({
    atMs: fc.integer({ min: 0, max: 1500 }),
    kind: fc.constant('crash' as const),
    replica: fc.nat(7),
    forMs: fc.integer({ min: 1, max: 800 }),
  }),
);

/** Router settings; pass fixed values to pin some (for example wait and fallback disabled). */
export function routerSettings(
  pinned: Partial<{ [K in keyof RouterSettings]: fc.Arbitrary<RouterSettings[K]> }> = {},
): fc.Arbitrary<RouterSettings> {
  return fc.record({
    waitBudgetMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 300 })),
    pollIntervalMs: fc.integer({ min: 1, max: 20 }),
    fallbackEnabled: fc.boolean(),
    burst: fc.integer({ min: 1, max: 5 }),
    ratePerSecond: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })),
    degraded: fc.constantFrom('error' as const, 'stale' as const),
    selection: fc.constantFrom<SelectionSetting>(
      'balanced',
      'least-lag',
      'round-robin',
      'random',
      'affinity',
    ),
    maxLagSeconds: fc.constantFrom(10, 0.1, 0.02),
    maxSampleAgeMs: fc.option(fc.integer({ min: 5, max: 500 }), { nil: undefined }),
    monitorIntervalMs: fc.integer({ min: 5, max: 100 }),
    ...pinned,
  });
}

/** Whole schedules: 1-4 replicas, 1-4 sessions of up to 25 steps, up to 10 faults. */
export function scheduleArbitrary(
  router: fc.Arbitrary<RouterSettings> = routerSettings(),
): fc.Arbitrary<Schedule> {
  return fc.record({
    seed: fc.integer(),
    replicaLagsMs: fc.array(lagMs, { minLength: 1, maxLength: 4 }),
    serverSideWait: fc.boolean(),
    maxReadLatencyMs: fc.integer({ min: 0, max: 3 }),
    maxCommitLatencyMs: fc.integer({ min: 0, max: 3 }),
    tokenRoundTrip: fc.boolean(),
    router,
    sessions: fc.array(fc.array(sessionStep, { minLength: 1, maxLength: 25 }), {
      minLength: 1,
      maxLength: 4,
    }),
    events: fc.array(clusterEvent, { maxLength: 10 }),
  });
}

/** Small deterministic PRNG (mulberry32): latencies and random selection replay with the seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
