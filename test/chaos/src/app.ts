// The application under test: what a service built on Tidemark does. One adapter and one Router
// per configuration (topology); sessions carry their token as encoded text between requests,
// like a cookie. After a topology change the operator "reconfigures" it: a new adapter and
// Router for the new topology, the old one drained and closed.

import {
  type AnyConformanceTarget,
  CLUSTER_NAME,
  NaiveRouter,
  type Order,
} from '@tidemark/conformance';
import {
  ErrorCode,
  isTidemarkError,
  Router,
  type RouterOptions,
  Session,
  TokenCodec,
} from '@tidemark/core';
import { type Adapter, isSocketError } from '@tidemark/core/adapter';
import type { Cluster } from '@tidemark/test-clusters';
import type { ErrorClass } from './history.js';

/** Which router the app uses: Tidemark's, or the naive control (no tokens, any replica). */
export type ControlMode = 'tidemark' | 'naive';

/**
 * How the app's tokens leave a request, as the HTTP carriers do it: `settle` every pending
 * position first (the default), or `carry` replica reads in the token (`carryPending`), settling
 * only writes and the primary's reads; the next request settles the carried ones.
 */
export type TokenMode = 'settle' | 'carry';

/**
 * How the app writes: in the router's default managed transaction (`transaction`), or in
 * autocommit (`autocommit`, `transaction: false`, the shape of `pool.query('INSERT ...')`), where
 * a PostgreSQL write's position comes from a primary probe after it unless captured for free.
 */
export type WriteMode = 'transaction' | 'autocommit';

/**
 * When the app's router settles a replica read's position (the router's `settle` option):
 * `deferred` by a shared probe before the session next needs it, `immediate` before the read
 * returns (on PostgreSQL from the read's own round trip, `Adapter.observesWithRead`).
 */
export type SettleMode = NonNullable<AppRouterOptions['settle']>;

/** What one operation produced, as the app saw it. */
export interface OpOutcome {
  readonly ok: boolean;
  readonly rows?: readonly number[];
  readonly errorClass?: ErrorClass;
  readonly errorCode?: string;
  readonly errorMessage?: string;
  readonly lostReport?: 'other-history' | 'lost-write';
  /** The verdict a `lostWrite` outcome carried (`other-history`, `unverified`). */
  readonly lostVerdict?: string;
  readonly target?: string;
  readonly reason?: string;
  /** The token to carry to the next request (unchanged when the operation could not say). */
  readonly tokenAfter: string | undefined;
}

/** Router options the campaign may set; adapter and cluster name come from the app. */
export type AppRouterOptions = Omit<RouterOptions<unknown, unknown>, 'adapter' | 'cluster'>;

interface Generation {
  readonly id: number;
  readonly primary: string;
  readonly replicas: readonly string[];
  // biome-ignore lint/suspicious/noExplicitAny: the target's position and connection types are erased.
  readonly adapter: Adapter<any, any>;
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  readonly router: Router<any, any> | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  readonly naive: NaiveRouter<any, any> | undefined;
  inflight: number;
  idle: (() => void) | undefined;
}

/** Counters the app keeps across configurations. */
export interface AppStats {
  generations: number;
  /** Route decisions of successful reads, by reason. */
  readonly reasons: Record<string, number>;
  /** Router metrics summed over every closed configuration. */
  otherHistoryEvents: number;
  lostWriteEvents: number;
  capRejections: number;
  retries: number;
  waits: number;
  waitsReached: number;
  /** Writes whose `writeDetailed` outcome carried `lostWrite`. */
  lostWriteOutcomes: number;
  /** Pending read positions that could not be settled before the token went back (counted). */
  settleErrors: number;
}

export class App {
  readonly tokens: TokenCodec;
  readonly stats: AppStats = {
    generations: 0,
    reasons: {},
    otherHistoryEvents: 0,
    lostWriteEvents: 0,
    capRejections: 0,
    retries: 0,
    waits: 0,
    waitsReached: 0,
    lostWriteOutcomes: 0,
    settleErrors: 0,
  };
  private current: Generation | undefined;
  private nextGeneration = 1;
  private closed = false;

  constructor(
    private readonly target: AnyConformanceTarget,
    private readonly cluster: Cluster,
    readonly mode: ControlMode,
    private readonly routerOptions: AppRouterOptions = {},
    secret: string,
    readonly tokenMode: TokenMode = 'settle',
    readonly writeMode: WriteMode = 'transaction',
  ) {
    // Signed like a real cookie: a token is only ever what this app issued.
    this.tokens = new TokenCodec({ keys: [{ id: 'chaos', secret }] });
  }

  get generation(): number {
    return this.current?.id ?? 0;
  }

  /** The topology the app is configured with: primary and listed replicas. */
  get configured(): { primary: string; replicas: readonly string[] } | undefined {
    return this.current && { primary: this.current.primary, replicas: this.current.replicas };
  }

  /**
   * Configure the app for the cluster's current topology: the primary and every running
   * replica, as an operator lists them (a replica still on an old history included: nobody has
   * told the operator). The old configuration keeps serving the operations it started, then
   * closes.
   */
  async reconfigure(): Promise<void> {
    if (this.closed) return;
    const next = await this.build();
    const old = this.current;
    this.current = next;
    if (old) await this.retire(old);
  }

  /**
   * Reconfigure when the topology the app knows is out of date: another primary, or a running
   * replica the configuration does not list (restarted or rebuilt by the operator). Replicas
   * that went down stay listed: the router's monitor deals with them.
   */
  async syncTopology(): Promise<boolean> {
    const known = this.current;
    const primary = this.cluster.primary();
    const listed = new Set(known?.replicas ?? []);
    const missing = this.cluster.replicas().some((node) => node.running && !listed.has(node.name));
    if (known && known.primary === primary.name && !missing) return false;
    await this.reconfigure();
    return true;
  }

  async write(token: string | undefined, order: Order): Promise<OpOutcome> {
    return this.withGeneration(async (gen) => {
      const insert = (connection: unknown) => this.target.workload.insertOrder(connection, order);
      if (this.mode === 'naive') {
        try {
          if (gen.naive) await gen.naive.write(insert);
          else await gen.adapter.write(insert, {});
          return { ok: true, tokenAfter: undefined };
        } catch (error) {
          return { ok: false, ...this.classify(gen, error), tokenAfter: undefined };
        }
      }
      const router = gen.router!;
      const session = this.sessionOf(token);
      try {
        const { lostWrite } = await router.writeDetailed(session, insert, {
          transaction: this.writeMode === 'transaction',
        });
        if (lostWrite === undefined) return { ok: true, tokenAfter: await this.encode(session) };
        this.stats.lostWriteOutcomes++;
        return {
          ok: true,
          lostReport: 'lost-write',
          lostVerdict: lostWrite.verdict,
          tokenAfter: await this.encode(session),
        };
      } catch (error) {
        return { ok: false, ...this.classify(gen, error), tokenAfter: await this.encode(session) };
      }
    });
  }

  async read(token: string | undefined, customer: number): Promise<OpOutcome> {
    return this.withGeneration(async (gen) => {
      const list = (connection: unknown) => this.target.workload.ordersOf(connection, customer);
      if (this.mode === 'naive') {
        if (!gen.naive) {
          return {
            ok: false,
            errorClass: 'availability',
            errorCode: 'NO_REPLICA_LISTED',
            errorMessage: 'the naive control has no replica to read from',
            tokenAfter: undefined,
          };
        }
        try {
          const { value, target } = await gen.naive.read(list);
          return { ok: true, rows: value, target, reason: 'naive', tokenAfter: undefined };
        } catch (error) {
          return { ok: false, ...this.classify(gen, error), tokenAfter: undefined };
        }
      }
      const router = gen.router!;
      const session = this.sessionOf(token);
      try {
        const { value, decision } = await router.readDetailed(session, list);
        this.stats.reasons[decision.reason] = (this.stats.reasons[decision.reason] ?? 0) + 1;
        return {
          ok: true,
          rows: value,
          target: decision.target,
          reason: decision.reason,
          tokenAfter: await this.encode(session),
        };
      } catch (error) {
        const classified = this.classify(gen, error);
        if (classified.errorClass !== 'other-history') {
          return { ok: false, ...classified, tokenAfter: await this.encode(session) };
        }
        // What the error tells the app to do: re-read from the primary and start afresh. The
        // fresh session starts at the primary's current position, so the session's surviving
        // writes stay visible to it. If the primary cannot say, the old token is kept and the
        // next read meets the same error.
        const restarted = await this.restartAtPrimary(router, token);
        return {
          ok: false,
          ...classified,
          lostReport: 'other-history',
          tokenAfter: restarted,
        };
      }
    });
  }

  /** Applied positions of the listed replicas, most advanced first (unreachable ones left out). */
  async replicasByProgress(names: readonly string[]): Promise<string[]> {
    const gen = this.current;
    if (!gen) return [];
    const adapter = gen.adapter;
    const probed = await Promise.all(
      names
        .filter((name) => gen.replicas.includes(name))
        .map(async (name) => {
          try {
            const result = await adapter.probe(name, {
              signal: AbortSignal.timeout(2000),
              primary: undefined,
            });
            return { name, applied: result.applied as unknown };
          } catch {
            return undefined;
          }
        }),
    );
    const known = probed.filter((p) => p !== undefined);
    known.sort((a, b) => {
      const relation = adapter.codec.compare(a.applied, b.applied);
      if (relation === 'covered') return -1; // a has applied b: a first
      if (relation === 'behind') return 1;
      return 0;
    });
    return known.map((p) => p.name);
  }

  async close(): Promise<void> {
    this.closed = true;
    const last = this.current;
    this.current = undefined;
    if (last) await this.retire(last);
  }

  private async withGeneration(run: (gen: Generation) => Promise<OpOutcome>): Promise<OpOutcome> {
    const gen = this.current;
    if (!gen) {
      return {
        ok: false,
        errorClass: 'availability',
        errorCode: 'APP_NOT_CONFIGURED',
        tokenAfter: undefined,
      };
    }
    gen.inflight++;
    try {
      return await run(gen);
    } finally {
      gen.inflight--;
      if (gen.inflight === 0) gen.idle?.();
    }
  }

  private async build(): Promise<Generation> {
    const adapter = this.target.createAdapter(this.cluster, { unreplicatedWrites: true });
    const id = this.nextGeneration++;
    const primary = this.cluster.primary().name;
    const replicas = [...adapter.replicas];
    this.stats.generations++;
    if (this.mode === 'naive') {
      // The control reads round-robin over the listed replicas; with none listed it has nothing
      // to read from, and every read fails (availability), as such an app would.
      const naive = replicas.length > 0 ? new NaiveRouter(adapter) : undefined;
      return {
        id,
        primary,
        replicas,
        adapter,
        router: undefined,
        naive,
        inflight: 0,
        idle: undefined,
      };
    }
    const router = new Router({ ...this.routerOptions, adapter, cluster: CLUSTER_NAME });
    router.events.on('other-history', () => {
      this.stats.otherHistoryEvents++;
    });
    router.events.on('lost-write', () => {
      this.stats.lostWriteEvents++;
    });
    await withTimeout(router.ready(), 15_000).catch(() => undefined);
    return {
      id,
      primary,
      replicas,
      adapter,
      router,
      naive: undefined,
      inflight: 0,
      idle: undefined,
    };
  }

  /** Let in-flight operations finish (bounded), then close the configuration. */
  private async retire(gen: Generation): Promise<void> {
    if (gen.inflight > 0) {
      await withTimeout(
        new Promise<void>((resolve) => {
          gen.idle = resolve;
        }),
        10_000,
      ).catch(() => undefined);
    }
    if (gen.router) {
      const m = gen.router.metrics();
      this.stats.capRejections += m.capRejections;
      this.stats.retries += m.retries;
      this.stats.waits += m.waits;
      this.stats.waitsReached += m.waitsReached;
    }
    const closing = gen.router ? gen.router.close() : (gen.naive?.close() ?? gen.adapter.close());
    await withTimeout(closing, 10_000).catch(() => undefined);
  }

  /** The position a token holds for the cluster, as text (for the record; undefined: none). */
  positionOf(token: string | undefined): string | undefined {
    if (token === undefined) return undefined;
    try {
      return this.sessionOf(token).positionText(CLUSTER_NAME);
    } catch {
      return undefined;
    }
  }

  private sessionOf(token: string | undefined): Session {
    return Session.fromToken(token === undefined ? undefined : this.tokens.decode(token));
  }

  /**
   * The token to send back, as the HTTP carriers make it: pending positions settled first (in
   * `carry` mode only writes and primary reads; replica reads go in the token as pending nodes).
   * A failure is counted, and the token then holds what is settled (plus the carried reads).
   */
  private async encode(session: Session): Promise<string | undefined> {
    const carry = this.tokenMode === 'carry';
    if (session.unsettled) {
      try {
        await withTimeout(carry ? session.settledForCarrying() : session.settled(), 5_000);
      } catch {
        this.stats.settleErrors++;
      }
    }
    const { positions } = session.settledTokenData();
    const pending = carry ? session.pendingReads() : {};
    const carried = Object.keys(pending).length > 0;
    if (Object.keys(positions).length === 0 && !carried) return undefined;
    return this.tokens.encode(carried ? { positions, pending } : { positions });
  }

  private async restartAtPrimary(
    // biome-ignore lint/suspicious/noExplicitAny: erased position and connection types.
    router: Router<any, any>,
    token: string | undefined,
  ): Promise<string | undefined> {
    try {
      const position = await withTimeout(router.monitor.refreshPrimary(), 5_000);
      if (position === undefined) return token;
      const fresh = new Session();
      fresh.raise(CLUSTER_NAME, router.codec, position);
      return await this.encode(fresh);
    } catch {
      return token;
    }
  }

  private classify(
    gen: Generation,
    error: unknown,
  ): { errorClass: ErrorClass; errorCode: string; errorMessage: string } {
    const errorMessage = error instanceof Error ? error.message : String(error);
    if (isTidemarkError(error)) {
      const code = error.code;
      if (code === ErrorCode.OtherHistory) {
        return { errorClass: 'other-history', errorCode: code, errorMessage };
      }
      // Retryable by its own word (replicas behind, read failed, history unverified), or the
      // configuration closed under it during a reconfiguration.
      if (error.retryable || code === ErrorCode.Closed) {
        return { errorClass: 'availability', errorCode: code, errorMessage };
      }
      return { errorClass: 'unexpected', errorCode: code, errorMessage };
    }
    const code = driverCode(error);
    if (isSocketError(error) || gen.adapter.isRetryable?.(error) === true) {
      return { errorClass: 'availability', errorCode: code, errorMessage };
    }
    return { errorClass: 'unexpected', errorCode: code, errorMessage };
  }
}

function driverCode(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const { code, errno } = error as { code?: unknown; errno?: unknown };
    if (typeof code === 'string' && code.length > 0) return code;
    if (typeof errno === 'number') return `errno ${errno}`;
  }
  return error instanceof Error ? error.name : typeof error;
}

export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
