/**
 * The cluster regimes of the model: how far each of the four replicas lags over time, and which
 * replicas are down when. A regime is a plan of timed events, drawn from its own seeded stream,
 * so every strategy runs on exactly the same cluster.
 *
 * Lag is the simulator's: a replica applies each primary commit `lag` ms after it was made, in
 * order. Lag is redrawn every {@link LAG_STEP_MS}: when it grows the replica stalls until its
 * entries are due again; when it shrinks it catches up at once (the simulator applies
 * everything that is due).
 */
import { Random } from './random.js';

export const REPLICAS = ['r0', 'r1', 'r2', 'r3'] as const;

/** How often each replica's lag is redrawn. */
export const LAG_STEP_MS = 500;

/**
 * Each replica's lag is its regime's nominal lag times a fixed factor (replicas differ: hardware,
 * distance) times a lognormal jitter (sigma {@link DEFAULT_JITTER_SIGMA} unless the plan says
 * otherwise) redrawn every {@link LAG_STEP_MS}. Lags are rounded to the model's tick (at least
 * one tick), so replicas apply on the same time grid the reads arrive on.
 */
const REPLICA_FACTORS = [0.8, 0.9, 1.1, 1.25] as const;
export const DEFAULT_JITTER_SIGMA = 0.2;

export type ClusterEvent =
  | {
      readonly atMs: number;
      readonly kind: 'lag';
      readonly replica: string;
      readonly lagMs: number;
    }
  | { readonly atMs: number; readonly kind: 'crash' | 'restart'; readonly replica: string };

export interface RegimePlanOptions {
  readonly seed: number;
  /** Start of the measured window (after the warm-up). */
  readonly startMs: number;
  /** End of the measured window. */
  readonly endMs: number;
  /** Sigma of the lognormal lag jitter; 0: every replica keeps its nominal x factor lag. */
  readonly jitterSigma: number;
  /** The model's time grid; lags are rounded to it. */
  readonly tickMs: number;
}

export interface Regime {
  readonly name: string;
  /** One line for the README and the table. */
  readonly description: string;
  /** Nominal steady lag in ms, for the chart's x axis; undefined for the incident regimes. */
  readonly lagMs: number | undefined;
  /** The events over [0, window.endMs], sorted by time. */
  plan(options: RegimePlanOptions): ClusterEvent[];
}

function steady(name: string, lagMs: number): Regime {
  return {
    name,
    description: `every replica lags about ${formatMs(lagMs)} (x0.8-1.25 per replica, jitter)`,
    lagMs,
    plan: (options) => jitteredLag(new Random(options.seed, `lag:${name}`), lagMs, options),
  };
}

/** Lag events for all replicas: nominal x factor x jitter, or `override` where it says so. */
function jitteredLag(
  random: Random,
  nominalMs: number,
  options: RegimePlanOptions,
  override?: (replica: number, atMs: number) => number | undefined,
): ClusterEvent[] {
  const events: ClusterEvent[] = [];
  for (let at = 0; at <= options.endMs; at += LAG_STEP_MS) {
    REPLICAS.forEach((replica, i) => {
      const jitter = Math.exp(options.jitterSigma * random.normal());
      const lagMs = override?.(i, at) ?? nominalMs * REPLICA_FACTORS[i]! * jitter;
      const onTick = Math.max(1, Math.round(lagMs / options.tickMs)) * options.tickMs;
      events.push({ atMs: at, kind: 'lag', replica, lagMs: onTick });
    });
  }
  return events;
}

/**
 * Normal lag (about 5 ms) with incidents: on each replica, independently, replay stalls now and
 * then (on average every 20 s, for 2-12 s) to a lag drawn log-uniformly between 0.5 s and 30 s,
 * then catches up. Incidents on several replicas at once happen by chance.
 */
const spiky: Regime = {
  name: 'spiky',
  description:
    '5 ms normally; per replica, incidents every ~20 s: lag jumps to 0.5-30 s for 2-12 s',
  lagMs: undefined,
  plan(options) {
    const random = new Random(options.seed, 'lag:spiky');
    const spikes = REPLICAS.map(() => {
      const list: Array<{ from: number; to: number; lagMs: number }> = [];
      let at = random.exponential(20_000);
      while (at < options.endMs) {
        const length = random.uniform(2_000, 12_000);
        list.push({ from: at, to: at + length, lagMs: random.logUniform(500, 30_000) });
        at += length + random.exponential(20_000);
      }
      return list;
    });
    return jitteredLag(random, 5, options, (replica, atMs) => {
      const spike = spikes[replica]!.find((s) => s.from <= atMs && atMs < s.to);
      return spike?.lagMs;
    });
  },
};

/** `down` replicas crash 5 s into the window and restart 45 s later; lag about 10 ms. */
function loss(name: string, down: number): Regime {
  return {
    name,
    description: `${down} of 4 replicas down for 45 s of the minute (lag about 10 ms)`,
    lagMs: undefined,
    plan(options) {
      const events = jitteredLag(new Random(options.seed, `lag:${name}`), 10, options);
      const length = options.endMs - options.startMs;
      const crashAt = options.startMs + Math.min(5_000, length / 12);
      const restartAt = crashAt + Math.min(45_000, (length * 3) / 4);
      for (const replica of REPLICAS.slice(0, down)) {
        events.push({ atMs: crashAt, kind: 'crash', replica });
        events.push({ atMs: restartAt, kind: 'restart', replica });
      }
      return events.sort((a, b) => a.atMs - b.atMs);
    },
  };
}

export const REGIMES: readonly Regime[] = [
  steady('lag-1ms', 1),
  steady('lag-10ms', 10),
  steady('lag-100ms', 100),
  steady('lag-1s', 1_000),
  steady('lag-5s', 5_000),
  steady('lag-30s', 30_000),
  spiky,
  loss('down-1of4', 1),
  loss('down-3of4', 3),
];

export function regimeByName(name: string): Regime {
  const regime = REGIMES.find((r) => r.name === name);
  if (!regime) {
    throw new Error(`unknown regime ${name}; one of ${REGIMES.map((r) => r.name).join(', ')}`);
  }
  return regime;
}

export function formatMs(ms: number): string {
  return ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`;
}
