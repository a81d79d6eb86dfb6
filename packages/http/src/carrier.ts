import {
  ConfigError,
  ErrorCode,
  runWithSession,
  Session,
  type TokenCodec,
  type TokenData,
  TokenError,
} from '@tidemark/core';
import { Emitter, type PositionCodec } from '@tidemark/core/adapter';
import { readCookie, serializeCookie } from './cookie.js';
import { codecMap, decodePosition, isTokenErrorLike, type KnownCluster } from './known.js';
import { tokenLifetimeSeconds } from './lifetime.js';
import { OncePerKey } from './once-per-source.js';
import type { TokenStore } from './store.js';
import { type TokenCodecOption, tokenCodecOf } from './token-option.js';

/** Header that carries the token between services (and to non-browser clients). */
export const DEFAULT_TOKEN_HEADER = 'x-tidemark-token';
/** Cookie that carries the token to and from browsers. */
export const DEFAULT_TOKEN_COOKIE = 'tidemark';

/** The few things the carrier needs from an incoming request, whatever the framework. */
export interface CarrierRequest {
  /** A request header by lower-case name; the first value when repeated. */
  header(name: string): string | undefined;
  /** True when the client connected over TLS (directly or as reported by a trusted proxy). */
  readonly secure: boolean;
  /** Who sent the request (client address), to log bad tokens once per source. */
  readonly source?: string | undefined;
}

/** Where a bad token came from and why it was refused. */
export interface BadTokenEvent {
  readonly code: TokenError['code'];
  readonly carrier: 'cookie' | 'header' | 'store';
  readonly source: string | undefined;
  readonly message: string;
  /** Set when only one cluster's position was bad (the rest of the token was kept). */
  readonly cluster?: string | undefined;
}

/** A token named a cluster this carrier does not know; the entry was dropped, never echoed. */
export interface UnknownClusterEvent {
  readonly cluster: string;
  readonly carrier: 'cookie' | 'header';
  readonly source: string | undefined;
}

/**
 * Two sources carried positions of one cluster from different replication histories. The
 * codec's merge chose `kept`; the router's checks report the session if `kept` is not on the
 * cluster's current history.
 */
export interface HistoryConflictEvent {
  readonly cluster: string;
  /** The source whose position met the conflicting one already merged. */
  readonly carrier: 'cookie' | 'header' | 'store';
  readonly source: string | undefined;
  readonly kept: string;
  readonly other: string;
}

export interface CarrierEvents {
  /** A token from a client (or the store) failed verification; counted in metrics too. */
  'bad-token': (event: BadTokenEvent) => void;
  /** A token named a cluster the carrier does not know; dropped and counted. */
  'unknown-cluster': (event: UnknownClusterEvent) => void;
  /** Sources disagreed about a cluster's history; counted in `historyConflicts`. */
  'history-conflict': (event: HistoryConflictEvent) => void;
  /** The token store failed or timed out; the request went on with what it had. */
  'store-error': (event: { operation: 'get' | 'raise'; error: unknown }) => void;
}

/**
 * Options of a {@link TokenCarrier}: the token codec (`tokens`) plus these settings.
 */
export type TokenCarrierOptions = TokenCarrierSettings & TokenCodecOption;

/** Everything a {@link TokenCarrier} takes besides its token codec. */
export interface TokenCarrierSettings {
  /**
   * The routers whose tokens this carrier carries (anything with `cluster` and `codec`). Their
   * codecs merge the positions a request carries in its header, its cookie and the store (the
   * newest per cluster wins), and only their clusters are accepted and written back. Without
   * routers, `codecs` or a `store` the carrier cannot compare positions (see the README).
   */
  routers?: Iterable<KnownCluster>;
  /** Codecs of further clusters, by name (for clusters without a router in this process). */
  codecs?: Readonly<Record<string, PositionCodec<unknown>>>;
  /** Cookie settings, or false to never read or write a cookie. */
  cookie?:
    | false
    | {
        /** Default `tidemark`. */
        name?: string;
        /** Default `/`. */
        path?: string;
        /** Default `Lax`: sent on top-level navigations, not on cross-site subrequests. */
        sameSite?: 'Lax' | 'Strict' | 'None';
        domain?: string;
        /** `auto` (default): Secure when the request came over TLS. */
        secure?: 'auto' | boolean;
      };
  /** Header name (lower case), or false to never read or write a header. Default `x-tidemark-token`. */
  header?: false | string;
  /** Write the token back in the response header as well as the cookie. Default true. */
  respondWithHeader?: boolean;
  /**
   * Seconds a token stays useful: cookie Max-Age and store TTL. Default
   * {@link tokenLifetimeSeconds}() (16 s with the router's default health thresholds); pass
   * `tokenLifetimeSeconds(yourRouterHealth)` when you changed them.
   */
  lifetimeSeconds?: number;
  /** `ignore` (default): treat a bad token as no token. `reject`: answer 400. Both count. */
  badToken?: 'ignore' | 'reject';
  /** Where to log the first bad token of each source and reason; false to stay quiet. */
  logger?: false | { warn(message: string): void };
  /** How many (source, reason) pairs to remember for log de-duplication. Default 1000. */
  logMemory?: number;
  /** Server-side store keyed by user (cross-device). Requests without a user id skip it. */
  store?: TokenStore;
  /** Longest wait for the store per operation; slower answers are skipped. Default 200 ms. */
  storeTimeoutMs?: number;
  /**
   * Carry the request's unsettled read positions in the response token instead of settling them
   * before the response (`Session.toTokenData({ carryPending: true })`): the next request reads
   * the same healthy replica again without any probe, or settles them with a probe it sends
   * itself. Saves a probe round trip per request. Writes always settle. Default false: every
   * app instance must run a version that reads such tokens before this is turned on. Tokens that
   * carry pending reads are accepted either way.
   */
  carryPending?: boolean;
}

/** Counters since the carrier was created. */
export interface CarrierMetrics {
  requests: number;
  /** Tokens (header or cookie) whose envelope verified. */
  tokensAccepted: number;
  /** Bad tokens and bad positions by error code (a bad position drops only its cluster). */
  badTokens: Record<string, number>;
  rejected: number;
  tokensWritten: number;
  /** Token entries for clusters the carrier does not know, dropped. */
  unknownClusters: number;
  /** Requests whose header and cookie disagreed: the older one was raised to the merge. */
  sourceMerges: number;
  /** Positions of one cluster from different histories met in one request. */
  historyConflicts: number;
  storeMerges: number;
  storeRaises: number;
  storeErrors: number;
  /**
   * Responses whose headers went out while a read's position was still pending (a streamed
   * Express response that wrote before it ended): their token holds only the settled part.
   */
  unsettledResponses: number;
  /** Pending read positions that could not be settled before the response (node and primary down). */
  settleErrors: number;
}

/** What a framework adapter sends when the bad-token policy is `reject`. */
export interface Rejection {
  readonly status: 400;
  readonly body: { readonly error: string; readonly message: string };
}

type ResolvedCookie = {
  name: string;
  path: string;
  sameSite: 'Lax' | 'Strict' | 'None';
  domain: string | undefined;
  secure: 'auto' | boolean;
};

/**
 * The framework-agnostic core of the HTTP carriers: reads the token from a request, builds the
 * request's session (merged with the user's stored token), and produces the headers that write
 * the token back when the request raised it. Adapters for Express, Fastify and Hono only
 * translate requests and responses.
 */
export class TokenCarrier {
  readonly events = new Emitter<CarrierEvents>();
  readonly lifetimeSeconds: number;
  /** The token codec this carrier verifies and signs with. */
  readonly tokens: TokenCodec;
  /** @deprecated Use {@link TokenCarrier.tokens} (the same TokenCodec). */
  get codec(): TokenCodec {
    return this.tokens;
  }
  readonly store: TokenStore | undefined;
  readonly headerName: string | undefined;
  /** Position codec per cluster this carrier knows (routers, codecs, the store's codecs). */
  readonly codecs: ReadonlyMap<string, PositionCodec<unknown>>;
  private readonly cookie: ResolvedCookie | undefined;
  private readonly respondWithHeader: boolean;
  private readonly badToken: 'ignore' | 'reject';
  private readonly logger: false | { warn(message: string): void };
  private readonly logged: OncePerKey;
  private readonly storeTimeoutMs: number;
  /** See {@link TokenCarrierOptions.carryPending}. */
  readonly carryPending: boolean;
  private readonly counters: CarrierMetrics = {
    requests: 0,
    tokensAccepted: 0,
    badTokens: {},
    rejected: 0,
    tokensWritten: 0,
    unknownClusters: 0,
    sourceMerges: 0,
    historyConflicts: 0,
    storeMerges: 0,
    storeRaises: 0,
    storeErrors: 0,
    unsettledResponses: 0,
    settleErrors: 0,
  };

  constructor(options: TokenCarrierOptions) {
    this.tokens = tokenCodecOf(options, 'TokenCarrier');
    this.store = options.store;
    this.headerName =
      options.header === false ? undefined : (options.header ?? DEFAULT_TOKEN_HEADER).toLowerCase();
    this.cookie =
      options.cookie === false
        ? undefined
        : {
            name: options.cookie?.name ?? DEFAULT_TOKEN_COOKIE,
            path: options.cookie?.path ?? '/',
            sameSite: options.cookie?.sameSite ?? 'Lax',
            domain: options.cookie?.domain,
            secure: options.cookie?.secure ?? 'auto',
          };
    if (!this.cookie && !this.headerName) {
      throw new ConfigError('Both cookie and header are disabled: the token would go nowhere.');
    }
    if (this.cookie && !/^[A-Za-z0-9_-]{1,64}$/.test(this.cookie.name)) {
      throw new ConfigError(
        `Cookie name ${JSON.stringify(this.cookie.name)} must match [A-Za-z0-9_-]{1,64}.`,
      );
    }
    this.respondWithHeader = options.respondWithHeader ?? true;
    this.lifetimeSeconds = options.lifetimeSeconds ?? tokenLifetimeSeconds();
    if (!(Number.isInteger(this.lifetimeSeconds) && this.lifetimeSeconds > 0)) {
      throw new ConfigError(
        `lifetimeSeconds must be a positive integer, got ${this.lifetimeSeconds}.`,
      );
    }
    this.badToken = options.badToken ?? 'ignore';
    if (this.badToken !== 'ignore' && this.badToken !== 'reject') {
      throw new ConfigError(
        `badToken must be 'ignore' or 'reject', got '${String(this.badToken)}'.`,
      );
    }
    this.logger = options.logger ?? console;
    this.logged = new OncePerKey(options.logMemory ?? 1000);
    this.storeTimeoutMs = options.storeTimeoutMs ?? 200;
    this.carryPending = options.carryPending ?? false;
    if (typeof this.carryPending !== 'boolean') {
      throw new ConfigError(
        `carryPending must be true or false, got ${String(this.carryPending)}.`,
      );
    }
    this.codecs = codecMap(options.routers, options.codecs, options.store?.codecs);
    if (this.codecs.size === 0 && this.logger) {
      this.logger.warn(
        'tidemark: this TokenCarrier knows no cluster (no routers, codecs or store), so it cannot compare positions: it keeps the first valid token (header before cookie) and writes back whatever clusters it carried. Pass routers: [yourRouter, ...] in its options.',
      );
    }
  }

  /**
   * Read the request's token and build its scope. Never throws for bad client input: under
   * `reject` the result carries the 400 answer to send instead.
   */
  async begin(
    request: CarrierRequest,
    userId?: string | undefined,
  ): Promise<CarrierScope | { rejected: Rejection }> {
    this.counters.requests++;
    const candidates: Array<['header' | 'cookie', string]> = [];
    if (this.headerName) {
      const text = request.header(this.headerName);
      if (text !== undefined && text !== '') candidates.push(['header', text]);
    }
    if (this.cookie) {
      const text = readCookie(request.header('cookie'), this.cookie.name);
      if (text !== undefined && text !== '') candidates.push(['cookie', text]);
    }
    const cookieSent = candidates.some(([carrier]) => carrier === 'cookie');
    if (this.codecs.size === 0) return this.beginUnordered(request, userId, candidates);

    // Every source counts: the newest position per cluster, by the cluster's codec.
    const session = new Session();
    const carried: Array<SourcePositions & { carrier: 'header' | 'cookie' }> = [];
    let cookieWasBad = false;
    for (const [carrier, text] of candidates) {
      let positions: Readonly<Record<string, string>>;
      let pending: TokenData['pending'];
      try {
        ({ positions, pending } = this.tokens.decode(text));
        this.counters.tokensAccepted++;
      } catch (error) {
        const tokenError = asTokenError(error);
        this.reportBadToken(tokenError, carrier, request.source);
        if (this.badToken === 'reject') return this.reject(tokenError, carrier);
        if (carrier === 'cookie') cookieWasBad = true;
        continue;
      }
      const merged = this.mergeInto(session, positions, carrier, request.source);
      if (merged instanceof TokenError) return this.reject(merged, carrier, true);
      carried.push({ ...merged, carrier });
      // Reads an earlier request left unsettled: the routers of their clusters settle them.
      for (const [cluster, nodes] of Object.entries(pending ?? {})) {
        if (this.codecs.has(cluster)) session.carry(cluster, nodes);
      }
    }
    // A source that carried less than the merge gets the merged token back, so header and
    // cookie converge; so does a cookie with dropped entries, so the browser stops sending them.
    const clientMerge = session.settledTokenData().positions;
    const behind = carried.filter(
      (source) => !sameEntries(source, clientMerge, source.carrier === 'cookie'),
    ).length;
    if (behind > 0 && carried.length > 1) this.counters.sourceMerges++;
    const clientVersion = session.version;
    let storeBehind = false;
    if (this.store && userId !== undefined) {
      storeBehind = await this.mergeStored(session, userId, request.source);
    }
    return new CarrierScope(this, session, userId, clientVersion, {
      clearCookie: cookieWasBad,
      rewrite: behind > 0,
      cookieSent,
      storeBehind,
      carried: snapshot(session, this.codecs),
    });
  }

  /**
   * Without codecs positions cannot be ordered: the first valid source wins (header before
   * cookie), as before the carrier knew its routers.
   */
  private async beginUnordered(
    request: CarrierRequest,
    userId: string | undefined,
    candidates: Array<['header' | 'cookie', string]>,
  ): Promise<CarrierScope | { rejected: Rejection }> {
    let cookieWasBad = false;
    let session: Session | undefined;
    for (const [carrier, text] of candidates) {
      try {
        const decoded = this.tokens.decode(text);
        session ??= Session.fromToken(decoded, { maxClusters: this.tokens.maxClusters });
        this.counters.tokensAccepted++;
      } catch (error) {
        const tokenError = asTokenError(error);
        this.reportBadToken(tokenError, carrier, request.source);
        if (this.badToken === 'reject') return this.reject(tokenError, carrier);
        if (carrier === 'cookie') cookieWasBad = true;
      }
    }
    session ??= new Session();
    const clientVersion = session.version;
    if (this.store && userId !== undefined) await this.mergeStored(session, userId, request.source);
    return new CarrierScope(this, session, userId, clientVersion, {
      clearCookie: cookieWasBad,
      rewrite: false,
      cookieSent: false,
      storeBehind: false,
      carried: undefined,
    });
  }

  private reject(
    error: TokenError,
    carrier: 'header' | 'cookie',
    position = false,
  ): { rejected: Rejection } {
    this.counters.rejected++;
    const name = carrier === 'header' ? this.headerName : this.cookie?.name;
    return {
      rejected: {
        status: 400,
        body: {
          error: error.code,
          message: position
            ? `The ${carrier} ${name} carries a position that is not valid for its cluster (${error.code}). Drop it and retry.`
            : `The ${carrier} ${name} does not carry a valid Tidemark token (${error.code}). Drop it and retry.`,
        },
      },
    };
  }

  /**
   * Raise `session` with one source's positions, cluster by cluster with the cluster's codec.
   * Unknown clusters and bad positions are dropped and counted. Returns the canonical texts the
   * source carried (for clusters kept), or, under `reject`, the first bad position's error.
   */
  private mergeInto(
    session: Session,
    positions: Readonly<Record<string, string>>,
    carrier: BadTokenEvent['carrier'],
    source: string | undefined,
  ): SourcePositions | TokenError {
    const kept = new Map<string, string>();
    let dropped = false;
    for (const [cluster, text] of Object.entries(positions)) {
      const codec = this.codecs.get(cluster);
      if (!codec) {
        dropped = true;
        if (carrier !== 'store') this.reportUnknownCluster(cluster, carrier, source);
        continue;
      }
      let decoded: { position: unknown; text: string };
      let current: unknown;
      let conflict: boolean;
      try {
        decoded = decodePosition(codec, cluster, text);
        current = session.position(cluster, codec);
        conflict =
          current !== undefined &&
          (codec.compare(current, decoded.position) === 'other-history' ||
            codec.compare(decoded.position, current) === 'other-history');
        session.raise(cluster, codec, decoded.position);
      } catch (error) {
        // Whatever the codec cannot decode or merge protects nothing: no position from here.
        const tokenError = asTokenError(error, ErrorCode.PositionInvalid);
        this.reportBadToken(tokenError, carrier, source, cluster);
        if (this.badToken === 'reject' && carrier !== 'store') return tokenError;
        dropped = true;
        continue;
      }
      kept.set(cluster, decoded.text);
      if (conflict) {
        this.reportHistoryConflict(session, cluster, codec, current, decoded, carrier, source);
      }
    }
    return { kept, dropped };
  }

  /** Counters since the carrier was created (a copy). */
  metrics(): CarrierMetrics {
    return { ...this.counters, badTokens: { ...this.counters.badTokens } };
  }

  /**
   * @internal Headers that write `session` back; empty when nothing is to be written. With
   * `carried` (what the request carried, per cluster), no position goes back lower than that.
   */
  outgoingHeaders(
    session: Session,
    secure: boolean,
    clearCookie: boolean,
    carried?: ReadonlyMap<string, Carried>,
  ): Array<[string, string]> {
    const headers: Array<[string, string]> = [];
    let token: string | undefined;
    const pending = this.carryPending ? session.pendingReads() : undefined;
    const carrying = pending !== undefined && Object.keys(pending).length > 0;
    if (session.unsettled && !carrying) this.counters.unsettledResponses++;
    if (session.clusters().length > 0 || carrying) {
      try {
        token = this.tokens.encode({
          positions: writtenPositions(session, carried),
          ...(carrying ? { pending } : {}),
        });
      } catch (error) {
        // Too many clusters for the limits: better no token than a failed response.
        this.reportBadToken(asTokenError(error), 'header', 'self');
      }
    }
    if (this.cookie) {
      const cookie = this.cookie;
      const attributes = {
        path: cookie.path,
        sameSite: cookie.sameSite,
        domain: cookie.domain,
        secure: cookie.secure === 'auto' ? secure : cookie.secure,
      };
      if (token !== undefined) {
        headers.push([
          'set-cookie',
          serializeCookie(cookie.name, token, {
            ...attributes,
            maxAgeSeconds: this.lifetimeSeconds,
          }),
        ]);
      } else if (clearCookie) {
        // Stop the browser from sending a token we refuse on every request.
        headers.push([
          'set-cookie',
          serializeCookie(cookie.name, '', { ...attributes, maxAgeSeconds: 0 }),
        ]);
      }
    }
    if (token !== undefined && this.headerName && this.respondWithHeader) {
      headers.push([this.headerName, token]);
    }
    if (token !== undefined) this.counters.tokensWritten++;
    return headers;
  }

  /**
   * @internal Settle the session's pending positions (when carrying reads, only the writes' and the
   * primary reads', `Session.settledForCarrying`);
   * failures are counted, never thrown.
   */
  async settle(session: Session): Promise<void> {
    try {
      if (this.carryPending) await session.settledForCarrying();
      else await session.settled();
    } catch {
      this.counters.settleErrors++;
    }
  }

  /** @internal Raise the user's stored token; failures are counted, never thrown. */
  async raiseStored(userId: string, session: Session): Promise<void> {
    const store = this.store;
    if (!store) return;
    try {
      await withTimeout(
        store.raise(userId, session.settledTokenData().positions),
        this.storeTimeoutMs,
      );
      this.counters.storeRaises++;
    } catch (error) {
      this.storeFailed('raise', error);
    }
  }

  /**
   * Merge the user's stored token into `session`. Returns true when the store holds less than
   * the merged session (so the request raises it even when the session did not change).
   */
  private async mergeStored(
    session: Session,
    userId: string,
    source: string | undefined,
  ): Promise<boolean> {
    const store = this.store as TokenStore;
    let stored: Awaited<ReturnType<TokenStore['get']>>;
    try {
      stored = await withTimeout(store.get(userId), this.storeTimeoutMs);
    } catch (error) {
      this.storeFailed('get', error);
      return false;
    }
    const merged = this.mergeInto(session, stored?.positions ?? {}, 'store', source);
    if (stored) this.counters.storeMerges++;
    if (merged instanceof TokenError) return true;
    // Behind when the session holds a cluster the store keeps at a lower (or no) position.
    return session
      .clusters()
      .some(
        (cluster) =>
          Object.hasOwn(store.codecs, cluster) &&
          merged.kept.get(cluster) !== session.positionText(cluster),
      );
  }

  private reportUnknownCluster(
    cluster: string,
    carrier: 'header' | 'cookie',
    source: string | undefined,
  ): void {
    this.counters.unknownClusters++;
    this.events.emit('unknown-cluster', { cluster, carrier, source });
    if (this.logger && this.logged.first(`${source ?? 'unknown'}|unknown-cluster`)) {
      this.logger.warn(
        `tidemark: dropped cluster "${cluster}" from the ${carrier} token (source ${source ?? 'unknown'}): this carrier does not know it, so it is neither routed on nor written back. If another service owns it, pass its codec in the carrier's codecs option. Further ones from this source are counted, not logged.`,
      );
    }
  }

  private reportHistoryConflict(
    session: Session,
    cluster: string,
    codec: PositionCodec<unknown>,
    before: unknown,
    incoming: { position: unknown; text: string },
    carrier: BadTokenEvent['carrier'],
    source: string | undefined,
  ): void {
    this.counters.historyConflicts++;
    const kept = session.positionText(cluster) ?? incoming.text;
    const beforeText = codec.encode(before);
    const other = kept === incoming.text ? beforeText : incoming.text;
    this.events.emit('history-conflict', { cluster, carrier, source, kept, other });
  }

  private storeFailed(operation: 'get' | 'raise', error: unknown): void {
    this.counters.storeErrors++;
    this.events.emit('store-error', { operation, error });
    if (this.logger && this.logged.first(`store|${operation}`)) {
      this.logger.warn(
        `tidemark: token store ${operation} failed (${error instanceof Error ? error.message : String(error)}); requests continue with the client's token only. Further store errors are counted, not logged.`,
      );
    }
  }

  private reportBadToken(
    error: TokenError,
    carrier: BadTokenEvent['carrier'],
    source: string | undefined,
    cluster?: string,
  ): void {
    this.counters.badTokens[error.code] = (this.counters.badTokens[error.code] ?? 0) + 1;
    this.events.emit('bad-token', {
      code: error.code,
      carrier,
      source,
      message: error.message,
      ...(cluster === undefined ? {} : { cluster }),
    });
    if (this.logger && this.logged.first(`${source ?? 'unknown'}|${error.code}`)) {
      const what =
        cluster === undefined ? 'a bad token' : `a bad position for cluster "${cluster}"`;
      this.logger.warn(
        `tidemark: ${this.badToken === 'reject' && carrier !== 'store' ? 'rejected' : 'ignored'} ${what} from the ${carrier} (source ${source ?? 'unknown'}, ${error.code}): ${error.message} Further ones from this source for this reason are counted, not logged.`,
      );
    }
  }
}

/** @internal What a scope must know about how its request's token arrived. */
export interface ScopeOrigin {
  /** The cookie carried a token that was refused: clear it unless a token is written. */
  readonly clearCookie: boolean;
  /** A source carried less than the merged token (or dropped entries): write the merge back. */
  readonly rewrite: boolean;
  /** The request sent a cookie; clear it when the session ends up empty. */
  readonly cookieSent: boolean;
  /** The store holds less than the merged token: raise it on commit. */
  readonly storeBehind: boolean;
  /** The merged positions the request carried, per cluster (undefined without codecs). */
  readonly carried: ReadonlyMap<string, Carried> | undefined;
}

/**
 * One request's view: its session, run scope and write-back. Created by {@link TokenCarrier.begin}.
 */
export class CarrierScope {
  private committed: Promise<void> | undefined;

  /** The pending reads the request carried in, to tell when the response must carry others. */
  private readonly clientPending: string;

  constructor(
    private readonly carrier: TokenCarrier,
    /** The request's session; also the current session inside {@link CarrierScope.run}. */
    readonly session: Session,
    readonly userId: string | undefined,
    private readonly clientVersion: number,
    private readonly origin: ScopeOrigin,
  ) {
    this.clientPending = JSON.stringify(session.pendingReads());
  }

  /** Run the handler with this scope's session as the current session. */
  run<T>(fn: () => T): T {
    return runWithSession(this.session, fn);
  }

  /** True when the request raised the token the client sent (a write, a read, or the store). */
  get changed(): boolean {
    return this.session.version !== this.clientVersion;
  }

  /** True when the pending reads to carry differ from the ones the request carried in. */
  private get pendingChanged(): boolean {
    return (
      this.carrier.carryPending &&
      JSON.stringify(this.session.pendingReads()) !== this.clientPending
    );
  }

  /**
   * Raise the user's stored token when the request raised the session (or the store held less
   * than the request carried). Idempotent; never rejects. Adapters await it before the response
   * completes, so the next request from any device finds the raised token.
   */
  commit(): Promise<void> {
    this.committed ??= this.settleAndRaise();
    return this.committed;
  }

  /** Settle what the request's reads observed (invariant 3), then raise the store with it. */
  private async settleAndRaise(): Promise<void> {
    if (this.session.unsettled) await this.carrier.settle(this.session);
    if (
      this.userId !== undefined &&
      this.carrier.store &&
      (this.changed || this.origin.storeBehind) &&
      this.session.clusters().length > 0
    ) {
      await this.carrier.raiseStored(this.userId, this.session);
    }
  }

  /**
   * Headers to add to the response (Set-Cookie and the token header); empty when the client
   * already holds the token. Never lower than what the request carried.
   */
  responseHeaders(secure: boolean): Array<[string, string]> {
    const { clearCookie, rewrite, cookieSent, carried } = this.origin;
    if (!this.changed && !clearCookie && !rewrite && !this.pendingChanged) return [];
    // Clear a refused cookie, or one whose every entry was dropped or forgotten; never clear a
    // cookie only because the merged token could not be encoded (that would lower it).
    const clear =
      carried === undefined
        ? clearCookie && !this.changed
        : (clearCookie || cookieSent) &&
          this.session.clusters().length === 0 &&
          Object.keys(this.session.pendingReads()).length === 0;
    return this.carrier.outgoingHeaders(this.session, secure, clear, carried);
  }
}

/** Type guard for the result of {@link TokenCarrier.begin}. */
export function isRejection(
  value: CarrierScope | { rejected: Rejection },
): value is { rejected: Rejection } {
  return !(value instanceof CarrierScope);
}

function asTokenError(
  error: unknown,
  code: TokenError['code'] = ErrorCode.TokenMalformed,
): TokenError {
  if (error instanceof TokenError) return error;
  if (isTokenErrorLike(error)) return new TokenError(error.code, error.message, { cause: error });
  return new TokenError(code, `Token could not be decoded: ${String(error)}`, {
    cause: error,
  });
}

/** @internal A position the request carried, with the codec that orders it. */
export interface Carried {
  readonly codec: PositionCodec<unknown>;
  readonly position: unknown;
}

/** The session's positions per known cluster, as the request left `begin`. */
function snapshot(session: Session, codecs: ReadonlyMap<string, PositionCodec<unknown>>) {
  const carried = new Map<string, Carried>();
  for (const cluster of session.clusters()) {
    const codec = codecs.get(cluster);
    if (!codec) continue;
    const position = session.position(cluster, codec);
    if (position !== undefined) carried.set(cluster, { codec, position });
  }
  return carried;
}

/**
 * The positions to write back: the session's, each merged with what the request carried, so a
 * response never lowers the client's token. A cluster the session forgot (the router dropped an
 * impossible position, the application a lost write) stays forgotten.
 */
function writtenPositions(
  session: Session,
  carried: ReadonlyMap<string, Carried> | undefined,
): Record<string, string> {
  // Settled by commit() before the headers on every normal path; only a streamed response that
  // wrote first gets here with reads pending (counted in unsettledResponses).
  const positions = new Map(Object.entries(session.settledTokenData().positions));
  for (const [cluster, { codec, position }] of carried ?? []) {
    if (!positions.has(cluster)) continue;
    let current: unknown;
    try {
      current = session.position(cluster, codec);
    } catch {
      current = undefined;
    }
    positions.set(
      cluster,
      codec.encode(current === undefined ? position : codec.merge(current, position)),
    );
  }
  // fromEntries defines own properties, so a cluster named __proto__ is kept as data.
  return Object.fromEntries(positions);
}

/** What one source carried: canonical texts of the positions kept, and whether any was dropped. */
interface SourcePositions {
  readonly kept: ReadonlyMap<string, string>;
  readonly dropped: boolean;
}

/** True when `source` holds exactly the entries of `merged` (and, if asked, dropped none). */
function sameEntries(
  source: SourcePositions,
  merged: Readonly<Record<string, string>>,
  strict: boolean,
): boolean {
  if (strict && source.dropped) return false;
  const clusters = Object.keys(merged);
  if (clusters.length !== source.kept.size) return false;
  return clusters.every((cluster) => source.kept.get(cluster) === merged[cluster]);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`token store did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
