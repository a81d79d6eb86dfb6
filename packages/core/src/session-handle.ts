import type { WriteOptions } from './adapter.js';
import { runWithSession } from './context.js';
import type { AcquireOptions, Lease, LeaseKind } from './lease.js';
import type { ReadOptions } from './router.js';
import type { Session } from './session.js';
import type { TokenCodec } from './token.js';

/** What a handle needs from its router (any adapter's `Router` fits). */
export interface HandleRouter<C> {
  read<T>(session: Session, fn: (connection: C) => Promise<T>, options?: ReadOptions): Promise<T>;
  write<T>(session: Session, fn: (connection: C) => Promise<T>, options?: WriteOptions): Promise<T>;
  acquire(session: Session, kind: LeaseKind, options?: AcquireOptions): Promise<Lease<C>>;
}

/**
 * One user's session on one router, in the shape of Cloudflare D1's Sessions API: made from the
 * token the client sent back (`router.withSession(cookie)`), used for this request's queries,
 * and turned back into the token to send (`await handle.token()`). Handles of several routers
 * made from one another (`mysql.withSession(pgHandle)`) share one session, so one token carries
 * the positions of every database the request touched.
 */
export class SessionHandle<C> {
  /** @internal Built by `Router.withSession`. */
  constructor(
    private readonly router: HandleRouter<C>,
    /** The positions this handle reads from and raises; shared with handles made from it. */
    readonly session: Session,
    private readonly tokens: TokenCodec,
  ) {}

  /** A read where this session's writes are visible (`Router.read`). */
  read<T>(fn: (connection: C) => Promise<T>, options?: ReadOptions): Promise<T> {
    return this.router.read(this.session, fn, options);
  }

  /** A write on the primary; its position goes into the session (`Router.write`). */
  write<T>(fn: (connection: C) => Promise<T>, options?: WriteOptions): Promise<T> {
    return this.router.write(this.session, fn, options);
  }

  /**
   * `fn` inside one transaction on the primary, opened, committed (or rolled back when `fn`
   * throws) by the adapter; the commit's position goes into the session.
   */
  transaction<T>(fn: (connection: C) => Promise<T>): Promise<T> {
    return this.router.write(this.session, fn, { transaction: true });
  }

  /**
   * A leased connection for this session (`Router.acquire`): `read` routed as {@link SessionHandle.read} is,
   * `write` on the primary. Release it when done; a write lease's position then goes into the
   * session, so this handle's next reads and its token see it.
   */
  acquire(kind: LeaseKind, options?: AcquireOptions): Promise<Lease<C>> {
    return this.router.acquire(this.session, kind, options);
  }

  /**
   * Run `fn` with this session as the request's session (`currentSession()`), for code that
   * finds it there: ORM front doors such as `@tidemark/kysely`, helpers deep in a call stack.
   */
  run<T>(fn: () => T): T {
    return runWithSession(this.session, fn);
  }

  /**
   * The token to hand back to the client (cookie, header, job payload), once the positions of
   * reads and writes still being settled are known; undefined while the session holds none (send
   * nothing, or clear the cookie). Encoded with the router's `tokens` codec.
   */
  async token(): Promise<string | undefined> {
    await this.session.settled();
    if (this.session.clusters().length === 0) return undefined;
    return this.tokens.encode(this.session.toTokenData());
  }

  /** The same as {@link SessionHandle.token}, under the name D1's Sessions API uses. */
  getBookmark(): Promise<string | undefined> {
    return this.token();
  }
}
