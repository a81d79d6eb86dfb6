import { type RouteDecision, type Router, Session, TokenCodec } from '@tidemark/core';
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

/** Probe calls per replica, counted by wrapping the adapter's `probe` before the router uses it. */
export class ProbeCounter<C> {
  private readonly counts = new Map<string, number>();

  constructor(adapter: BenchAdapter<C>) {
    const probe = adapter.probe.bind(adapter);
    adapter.probe = (id, context) => {
      this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
      return probe(id, context);
    };
  }

  snapshot(): Map<string, number> {
    return new Map(this.counts);
  }

  /** Probes per second per replica between two snapshots. */
  static rates(
    before: ReadonlyMap<string, number>,
    after: ReadonlyMap<string, number>,
    seconds: number,
  ): Record<string, number> {
    const rates: Record<string, number> = {};
    for (const [id, count] of after) rates[id] = (count - (before.get(id) ?? 0)) / seconds;
    return rates;
  }
}

/** What the router did during one measured cell, from its events. */
export class DecisionLog<C> {
  targets = new Map<Target, number>();
  waits: number[] = [];
  decisions = 0;

  constructor(router: Router<unknown, C>) {
    router.events.on('decision', (decision: RouteDecision) => {
      this.decisions++;
      this.targets.set(decision.target, (this.targets.get(decision.target) ?? 0) + 1);
    });
    router.events.on('wait', (event) => {
      this.waits.push(event.waitedMs);
    });
  }

  reset(): void {
    this.targets = new Map();
    this.waits = [];
    this.decisions = 0;
  }

  /** Share of reads per target, 0..1. */
  shares(): Record<Target, number> {
    const shares: Record<Target, number> = {};
    for (const [target, count] of [...this.targets].sort(([a], [b]) => a.localeCompare(b))) {
      shares[target] = this.decisions === 0 ? 0 : count / this.decisions;
    }
    return shares;
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

  constructor(readonly router: Router<unknown, C>) {}

  async write<T>(customer: number, fn: (connection: C) => Promise<T>): Promise<T> {
    const session = this.sessionOf(customer);
    const value = await this.router.write(session, fn, { transaction: false });
    this.remember(customer, session);
    return value;
  }

  async read<T>(customer: number, fn: (connection: C) => Promise<T>): Promise<T> {
    const session = this.sessionOf(customer);
    const value = await this.router.read(session, fn);
    this.remember(customer, session);
    return value;
  }

  private sessionOf(customer: number): Session {
    const cookie = this.cookies.get(customer);
    return Session.fromToken(cookie === undefined ? undefined : this.tokens.decode(cookie));
  }

  private remember(customer: number, session: Session): void {
    if (session.clusters().length > 0) {
      this.cookies.set(customer, this.tokens.encode(session.toTokenData()));
    }
  }
}
