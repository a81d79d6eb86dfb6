import {
  ConfigError,
  Emitter,
  ErrorCode,
  runWithSession,
  Session,
  type TokenCodec,
  TokenError,
} from '@tidemark/core';
import { readCookie, serializeCookie } from './cookie.js';
import { tokenLifetimeSeconds } from './lifetime.js';
import { OncePerKey } from './once-per-source.js';
import type { TokenStore } from './store.js';

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
}

export interface CarrierEvents {
  /** A token from a client (or the store) failed verification; counted in metrics too. */
  'bad-token': (event: BadTokenEvent) => void;
  /** The token store failed or timed out; the request went on with what it had. */
  'store-error': (event: { operation: 'get' | 'raise'; error: unknown }) => void;
}

export interface TokenCarrierOptions {
  /** Verifies and signs tokens: keys (rotation), maxLength, maxAgeSeconds. */
  codec: TokenCodec;
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
}

/** Counters since the carrier was created. */
export interface CarrierMetrics {
  requests: number;
  tokensAccepted: number;
  badTokens: Record<string, number>;
  rejected: number;
  tokensWritten: number;
  storeMerges: number;
  storeRaises: number;
  storeErrors: number;
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
  readonly codec: TokenCodec;
  readonly store: TokenStore | undefined;
  readonly headerName: string | undefined;
  private readonly cookie: ResolvedCookie | undefined;
  private readonly respondWithHeader: boolean;
  private readonly badToken: 'ignore' | 'reject';
  private readonly logger: false | { warn(message: string): void };
  private readonly logged: OncePerKey;
  private readonly storeTimeoutMs: number;
  private readonly counters: CarrierMetrics = {
    requests: 0,
    tokensAccepted: 0,
    badTokens: {},
    rejected: 0,
    tokensWritten: 0,
    storeMerges: 0,
    storeRaises: 0,
    storeErrors: 0,
  };

  constructor(options: TokenCarrierOptions) {
    this.codec = options.codec;
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
    let cookieWasBad = false;
    if (this.cookie) {
      const text = readCookie(request.header('cookie'), this.cookie.name);
      if (text !== undefined && text !== '') candidates.push(['cookie', text]);
    }
    let session: Session | undefined;
    for (const [carrier, text] of candidates) {
      try {
        // The header wins over the cookie: services forward it explicitly.
        const decoded = this.codec.decode(text);
        session ??= Session.fromToken(decoded);
        this.counters.tokensAccepted++;
      } catch (error) {
        const tokenError = asTokenError(error);
        this.reportBadToken(tokenError, carrier, request.source);
        if (this.badToken === 'reject') {
          this.counters.rejected++;
          return {
            rejected: {
              status: 400,
              body: {
                error: tokenError.code,
                message: `The ${carrier} ${carrier === 'header' ? this.headerName : this.cookie?.name} does not carry a valid Tidemark token (${tokenError.code}). Drop it and retry.`,
              },
            },
          };
        }
        if (carrier === 'cookie') cookieWasBad = true;
      }
    }
    session ??= new Session();
    const clientVersion = session.version;
    if (this.store && userId !== undefined) await this.mergeStored(session, userId, request.source);
    return new CarrierScope(this, session, userId, clientVersion, cookieWasBad);
  }

  /** Counters since the carrier was created (a copy). */
  metrics(): CarrierMetrics {
    return { ...this.counters, badTokens: { ...this.counters.badTokens } };
  }

  /** @internal Headers that write `session` back; empty when nothing is to be written. */
  outgoingHeaders(
    session: Session,
    secure: boolean,
    clearCookie: boolean,
  ): Array<[string, string]> {
    const headers: Array<[string, string]> = [];
    let token: string | undefined;
    if (session.clusters().length > 0) {
      try {
        token = this.codec.encode(session.toTokenData());
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

  /** @internal Raise the user's stored token; failures are counted, never thrown. */
  async raiseStored(userId: string, session: Session): Promise<void> {
    const store = this.store;
    if (!store) return;
    try {
      await withTimeout(store.raise(userId, session.toTokenData().positions), this.storeTimeoutMs);
      this.counters.storeRaises++;
    } catch (error) {
      this.storeFailed('raise', error);
    }
  }

  private async mergeStored(
    session: Session,
    userId: string,
    source: string | undefined,
  ): Promise<void> {
    const store = this.store as TokenStore;
    let stored: Awaited<ReturnType<TokenStore['get']>>;
    try {
      stored = await withTimeout(store.get(userId), this.storeTimeoutMs);
    } catch (error) {
      this.storeFailed('get', error);
      return;
    }
    if (!stored) return;
    for (const [cluster, text] of Object.entries(stored.positions)) {
      const codec = store.codecs[cluster];
      if (!codec) continue;
      try {
        session.raise(cluster, codec, codec.decode(text));
      } catch (error) {
        this.reportBadToken(asTokenError(error), 'store', source);
      }
    }
    this.counters.storeMerges++;
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
  ): void {
    this.counters.badTokens[error.code] = (this.counters.badTokens[error.code] ?? 0) + 1;
    this.events.emit('bad-token', { code: error.code, carrier, source, message: error.message });
    if (this.logger && this.logged.first(`${source ?? 'unknown'}|${error.code}`)) {
      this.logger.warn(
        `tidemark: ${this.badToken === 'reject' ? 'rejected' : 'ignored'} a bad token from the ${carrier} (source ${source ?? 'unknown'}, ${error.code}): ${error.message} Further ones from this source for this reason are counted, not logged.`,
      );
    }
  }
}

/**
 * One request's view: its session, run scope and write-back. Created by {@link TokenCarrier.begin}.
 */
export class CarrierScope {
  private committed: Promise<void> | undefined;

  constructor(
    private readonly carrier: TokenCarrier,
    /** The request's session; also the current session inside {@link CarrierScope.run}. */
    readonly session: Session,
    readonly userId: string | undefined,
    private readonly clientVersion: number,
    private readonly clearCookie: boolean,
  ) {}

  /** Run the handler with this scope's session as the current session. */
  run<T>(fn: () => T): T {
    return runWithSession(this.session, fn);
  }

  /** True when the request raised the token the client sent (a write, a read, or the store). */
  get changed(): boolean {
    return this.session.version !== this.clientVersion;
  }

  /**
   * Raise the user's stored token when the request raised the session. Idempotent; never
   * rejects. Adapters await it before the response completes, so the next request from any
   * device finds the raised token.
   */
  commit(): Promise<void> {
    this.committed ??=
      this.userId !== undefined && this.carrier.store && this.changed
        ? this.carrier.raiseStored(this.userId, this.session)
        : Promise.resolve();
    return this.committed;
  }

  /** Headers to add to the response (Set-Cookie and the token header); empty when unchanged. */
  responseHeaders(secure: boolean): Array<[string, string]> {
    if (!this.changed && !this.clearCookie) return [];
    return this.carrier.outgoingHeaders(this.session, secure, this.clearCookie && !this.changed);
  }
}

/** Type guard for the result of {@link TokenCarrier.begin}. */
export function isRejection(
  value: CarrierScope | { rejected: Rejection },
): value is { rejected: Rejection } {
  return !(value instanceof CarrierScope);
}

function asTokenError(error: unknown): TokenError {
  if (error instanceof TokenError) return error;
  return new TokenError(ErrorCode.TokenMalformed, `Token could not be decoded: ${String(error)}`, {
    cause: error,
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`token store did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
