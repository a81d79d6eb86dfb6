import { ErrorCode, TidemarkError, TokenError } from './errors.js';
import type { PositionCodec } from './position.js';
import { isClusterName, type TokenData } from './token.js';

/** Default limit of {@link Session.fromToken}: four times a TokenCodec's default maxClusters. */
const DEFAULT_MAX_CLUSTERS = 64;

export interface FromTokenOptions {
  /**
   * Most clusters the data may name. Default 64; pass your TokenCodec's `maxClusters` when you
   * raised it above that.
   */
  maxClusters?: number;
}

/**
 * A position a read observed that is not known yet: the router settles it from a probe of the
 * same node sent after the read finished (one probe serves every read that finished before it).
 */
export interface PendingPosition {
  /** The node the read ran on: `primary` or a replica id. */
  readonly target: string;
  /** Find the position and raise the session with it. Rejects (typed) when it cannot. */
  settle(): Promise<void>;
}

interface Entry {
  text: string;
  /** Decoded form, cached per codec so routing does not re-parse on every read. */
  decoded?: { codec: PositionCodec<unknown>; position: unknown };
}

/**
 * A session's high-water marks, one position per cluster. Create one per user (or request) and
 * carry it between requests as a token. Positions only ever move forward: {@link Session.raise}
 * merges, it never replaces.
 */
export class Session {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, PendingPosition[]>();
  private changes = 0;

  /**
   * Build a session from decoded token data (see {@link TokenCodec.decode}); `undefined` or
   * `null` is a new session. Position texts stay opaque until a router decodes them with its
   * codec. Throws a {@link TokenError} (`TIDEMARK_TOKEN_MALFORMED`, or `TIDEMARK_TOKEN_TOO_LARGE`
   * over `maxClusters`) when `data` does not have the shape `decode` returns.
   */
  static fromToken(data: TokenData | undefined | null, options: FromTokenOptions = {}): Session {
    const session = new Session();
    if (data === undefined || data === null) return session;
    const positions = validPositions(data, options.maxClusters ?? DEFAULT_MAX_CLUSTERS);
    for (const [cluster, text] of positions) session.entries.set(cluster, { text });
    return session;
  }

  /** Number of times a position was raised; carriers compare it to know when to write back. */
  get version(): number {
    return this.changes;
  }

  /** Cluster names this session holds a position for. */
  clusters(): string[] {
    return [...this.entries.keys()];
  }

  /** The encoded position for a cluster, as it would appear in a token. */
  positionText(cluster: string): string | undefined {
    return this.entries.get(cluster)?.text;
  }

  /**
   * The decoded position for a cluster, or undefined when the session has none.
   * Throws the codec's TokenError when the stored text is not a valid position.
   */
  position<P>(cluster: string, codec: PositionCodec<P>): P | undefined {
    const entry = this.entries.get(cluster);
    if (!entry) return undefined;
    if (entry.decoded?.codec !== codec) {
      entry.decoded = {
        codec: codec as PositionCodec<unknown>,
        position: codec.decode(entry.text),
      };
    }
    return entry.decoded.position as P;
  }

  /**
   * Raise the cluster's position to at least `position` (least upper bound with what is held).
   * Returns true when the stored position changed.
   */
  raise<P>(cluster: string, codec: PositionCodec<P>, position: P): boolean {
    let current: P | undefined;
    try {
      current = this.position(cluster, codec);
    } catch {
      // A stored position that does not decode protects nothing; the new one replaces it.
      current = undefined;
    }
    const next = current === undefined ? position : codec.merge(current, position);
    const text = codec.encode(next);
    const entry = this.entries.get(cluster);
    if (entry?.text === text) return false;
    this.entries.set(cluster, {
      text,
      decoded: { codec: codec as PositionCodec<unknown>, position: next },
    });
    this.changes++;
    return true;
  }

  /** Forget the cluster's position (for example after a lost write was handled). */
  forget(cluster: string): void {
    if (this.entries.delete(cluster)) this.changes++;
  }

  /**
   * Record a position to settle later (routers do this after a read). A later read on the same
   * node supersedes an earlier one: its settlement covers both.
   */
  defer(cluster: string, pending: PendingPosition): void {
    const list = (this.pending.get(cluster) ?? []).filter((p) => p.target !== pending.target);
    list.push(pending);
    this.pending.set(cluster, list);
  }

  /** Nodes with reads whose positions are not settled yet, for one cluster. */
  pendingTargets(cluster: string): string[] {
    return (this.pending.get(cluster) ?? []).map((p) => p.target);
  }

  /** True while some read's position is not settled yet. */
  get unsettled(): boolean {
    return this.pending.size > 0;
  }

  /**
   * Settle every pending position (or one cluster's): after this the token holds everything the
   * session's reads observed. Carriers call it before they encode. Positions that could not be
   * settled stay pending and the first error is thrown (typed, retryable).
   */
  async settled(cluster?: string): Promise<void> {
    const clusters = cluster === undefined ? [...this.pending.keys()] : [cluster];
    let failure: unknown;
    for (const name of clusters) {
      const list = this.pending.get(name);
      if (!list) continue;
      const results = await Promise.allSettled(list.map((p) => p.settle()));
      const done = new Set(list.filter((_, i) => results[i]?.status === 'fulfilled'));
      // Reads that finished meanwhile added entries of their own: keep those.
      const left = (this.pending.get(name) ?? []).filter((p) => !done.has(p));
      if (left.length > 0) this.pending.set(name, left);
      else this.pending.delete(name);
      const rejected = results.find((r) => r.status === 'rejected');
      if (rejected && failure === undefined) failure = rejected.reason;
    }
    if (failure !== undefined) throw failure;
  }

  /**
   * Plain data for {@link TokenCodec.encode}.
   *
   * @throws TidemarkError `TIDEMARK_UNSETTLED` while a read's position is pending: encoding now
   *   would hand out a token older than what the session saw. `await session.settled()` first.
   */
  toTokenData(): { positions: Record<string, string> } {
    if (this.unsettled) {
      throw new TidemarkError(
        ErrorCode.Unsettled,
        'The session has read positions that are not settled yet; await session.settled() before encoding its token (the HTTP carriers and the Redis store do this for you).',
      );
    }
    return this.settledTokenData();
  }

  /**
   * The positions settled so far, even while reads are pending: LOWER than what those reads saw.
   * Only for a caller that cannot wait any more (response headers already going out on a
   * streamed response); everyone else uses {@link Session.toTokenData} after `settled()`.
   */
  settledTokenData(): { positions: Record<string, string> } {
    // fromEntries defines own properties, so a cluster named __proto__ is kept as data.
    const positions: Record<string, string> = Object.fromEntries(
      [...this.entries].map(([cluster, entry]) => [cluster, entry.text]),
    );
    return { positions };
  }
}

const SHAPE_HINT =
  'Pass what TokenCodec.decode returns ({ positions: { <cluster>: <position text> }, issuedAt }), or undefined for a new session.';

/** The entries of token data, checked for the shape TokenCodec.decode produces. */
function validPositions(data: unknown, maxClusters: number): Array<[string, string]> {
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new TokenError(
      ErrorCode.TokenMalformed,
      `Token data must be an object, got ${shapeOf(data)}. ${SHAPE_HINT}`,
    );
  }
  const positions = (data as { positions?: unknown }).positions;
  if (typeof positions !== 'object' || positions === null || Array.isArray(positions)) {
    throw new TokenError(
      ErrorCode.TokenMalformed,
      `Token data must have a positions object, got ${shapeOf(positions)}. ${SHAPE_HINT}`,
    );
  }
  const entries = Object.entries(positions as Record<string, unknown>);
  if (entries.length > maxClusters) {
    throw new TokenError(
      ErrorCode.TokenTooLarge,
      `Token data names ${entries.length} clusters, more than the limit of ${maxClusters}. Pass { maxClusters } (your TokenCodec's limit) if this is intended.`,
    );
  }
  for (const [cluster, text] of entries) {
    if (!isClusterName(cluster)) {
      throw new TokenError(
        ErrorCode.TokenMalformed,
        `Token data names cluster ${JSON.stringify(cluster.slice(0, 80))}, which is not a cluster name (1-64 characters from A-Z a-z 0-9 _ -). ${SHAPE_HINT}`,
      );
    }
    if (typeof text !== 'string') {
      throw new TokenError(
        ErrorCode.TokenMalformed,
        `The position for cluster "${cluster}" must be the position's text (a string), got ${shapeOf(text)}. ${SHAPE_HINT}`,
      );
    }
  }
  return entries as Array<[string, string]>;
}

function shapeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? 'a string' : typeof value;
}
