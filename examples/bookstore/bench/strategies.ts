import { PRIMARY, type RouteDecision, type Router, Session, TokenCodec } from '@tidemark/core';
import type { NodePool } from '../src/databases/types.js';
import type { BenchAdapter } from './databases.js';

/** Where a read was served: `primary` or a replica id (`n1`, `n2`). */
export type Target = string;

/**
 * One way of running the Bookstore's calls, safe under concurrency (unlike the demo's
 * sequential strategies): the raw driver or Tidemark.
 */
export interface BenchStrategy<C> {
  write<T>(customer: number, fn: (connection: C) => Promise<T>): Promise<T>;
  read<T>(customer: number, fn: (connection: C) => Promise<T>): Promise<T>;
}

/**
 * The raw driver as an application without Tidemark uses it: writes on the primary, reads
 * spread round-robin over the replica pools.
 */
export class RawDriver<C> implements BenchStrategy<C> {
  private next = 0;

  constructor(
    readonly primary: NodePool<C>,
    readonly replicas: readonly NodePool<C>[],
  ) {}

  write<T>(_customer: number, fn: (connection: C) => Promise<T>): Promise<T> {
    return this.primary.use(fn);
  }

  /** A replica read, round-robin. */
  read<T>(_customer: number, fn: (connection: C) => Promise<T>): Promise<T> {
    this.next = (this.next + 1) % this.replicas.length;
    return this.replicas[this.next]!.use(fn);
  }

  async end(): Promise<void> {
    await Promise.all([this.primary, ...this.replicas].map((pool) => pool.end()));
  }
}

/** What one Tidemark variant did over its measured rounds, from the router and the adapter. */
export class Tally {
  readonly targets = new Map<Target, number>();
  readonly waits: number[] = [];
  decisions = 0;
  capRejections = 0;
  readonly probes = new Map<string, number>();
  /** Seconds this tally was active (the denominator of probe rates). */
  seconds = 0;
  readonly trips = { writes: 0, roundTrips: 0, reads: 0, readRoundTrips: 0 };

  /** Share of reads per target, 0..1, by target name. */
  shares(): Record<Target, number> {
    const shares: Record<Target, number> = {};
    for (const [target, count] of [...this.targets].sort(([a], [b]) => a.localeCompare(b))) {
      shares[target] = this.decisions === 0 ? 0 : count / this.decisions;
    }
    return shares;
  }

  primaryShare(): number | undefined {
    return this.decisions === 0 ? undefined : (this.targets.get(PRIMARY) ?? 0) / this.decisions;
  }

  /** Probe calls per second per replica while active. */
  probeRates(): Record<string, number> {
    const rates: Record<string, number> = {};
    for (const [id, count] of [...this.probes].sort(([a], [b]) => a.localeCompare(b))) {
      rates[id] = this.seconds === 0 ? 0 : count / this.seconds;
    }
    return rates;
  }

  roundTripsPerRead(): number | undefined {
    return this.trips.reads === 0 ? undefined : this.trips.readRoundTrips / this.trips.reads;
  }

  roundTripsPerWrite(): number | undefined {
    return this.trips.writes === 0 ? undefined : this.trips.roundTrips / this.trips.writes;
  }
}

/**
 * A router with counters that only run while a {@link Tally} is active: probe calls per replica
 * (the adapter's `probe` and `observe`, wrapped: the monitor's polls, waits that poll, settling),
 * decisions and waits (router events), round trips (`adapter.roundTrips()`), cap rejections.
 */
export class InstrumentedRouter<C> {
  private current: Tally | undefined;

  constructor(
    readonly adapter: BenchAdapter<C>,
    readonly router: Router<unknown, C>,
  ) {
    const count = (id: string) => {
      if (this.current) this.current.probes.set(id, (this.current.probes.get(id) ?? 0) + 1);
    };
    const probe = adapter.probe.bind(adapter);
    adapter.probe = (id, context) => {
      count(id);
      return probe(id, context);
    };
    // Position-only observations (settling, catch-up watching) are probes too, if cheaper ones.
    const observe = adapter.observe?.bind(adapter);
    if (observe) {
      adapter.observe = (id, context) => {
        count(id);
        return observe(id, context);
      };
    }
    router.events.on('decision', (decision: RouteDecision) => {
      const tally = this.current;
      if (!tally) return;
      tally.decisions++;
      tally.targets.set(decision.target, (tally.targets.get(decision.target) ?? 0) + 1);
    });
    router.events.on('wait', (event) => {
      this.current?.waits.push(event.waitedMs);
    });
  }

  /** Run `fn` with `tally` collecting. */
  async during<T>(tally: Tally, fn: () => Promise<T>): Promise<T> {
    const trips = this.adapter.roundTrips();
    const rejected = this.router.metrics().capRejections;
    const started = performance.now();
    for (const id of this.adapter.replicas) if (!tally.probes.has(id)) tally.probes.set(id, 0);
    this.current = tally;
    try {
      return await fn();
    } finally {
      this.current = undefined;
      tally.seconds += (performance.now() - started) / 1000;
      const after = this.adapter.roundTrips();
      tally.trips.writes += after.writes - trips.writes;
      tally.trips.roundTrips += after.roundTrips - trips.roundTrips;
      tally.trips.reads += after.reads - trips.reads;
      tally.trips.readRoundTrips += after.readRoundTrips - trips.readRoundTrips;
      tally.capRejections += this.router.metrics().capRejections - rejected;
    }
  }
}

/**
 * Tidemark as a web app uses it: each customer's position travels as a token between requests
 * (a cookie jar here), a request decodes it into a session, and the response carries it back.
 * Writes are autocommit (`transaction: false`): the same single INSERT the raw driver sends.
 */
export class TidemarkStrategy<C> implements BenchStrategy<C> {
  private readonly tokens = new TokenCodec();
  private readonly cookies = new Map<number, string>();

  constructor(
    readonly router: Router<unknown, C>,
    private readonly options: { carryPending?: boolean } = {},
  ) {}

  async write<T>(customer: number, fn: (connection: C) => Promise<T>): Promise<T> {
    const session = this.sessionOf(customer);
    const value = await this.router.write(session, fn, { transaction: false });
    await this.remember(customer, session);
    return value;
  }

  async read<T>(customer: number, fn: (connection: C) => Promise<T>): Promise<T> {
    const session = this.sessionOf(customer);
    const value = await this.router.read(session, fn);
    await this.remember(customer, session);
    return value;
  }

  private sessionOf(customer: number): Session {
    const cookie = this.cookies.get(customer);
    return Session.fromToken(cookie === undefined ? undefined : this.tokens.decode(cookie));
  }

  /**
   * As a carrier does at the end of a request: settle what the reads saw, then encode; or, with
   * `carryPending`, settle the writes and primary reads and carry the replica reads in the cookie.
   */
  private async remember(customer: number, session: Session): Promise<void> {
    if (this.options.carryPending) await session.settledForCarrying();
    else await session.settled();
    const data = session.toTokenData({ carryPending: this.options.carryPending ?? false });
    if (session.clusters().length > 0 || data.pending !== undefined) {
      this.cookies.set(customer, this.tokens.encode(data));
    }
  }
}
