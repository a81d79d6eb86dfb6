import { PRIMARY } from './adapter.js';
import { ErrorCode, TidemarkError, TokenError } from './errors.js';
import type { PositionCodec } from './position.js';
import { isClusterName, isNodeId, MAX_PENDING_NODES, type TokenData } from './token.js';

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
  /**
   * True for a position carried in the token from an earlier request, not yet bound to a router
   * of its cluster (a router binds it when the session routes there: {@link Session.bindCarried}).
   */
  readonly carried?: boolean;
  /**
   * True for a write's position: never carried in a token, since settling it later could no
   * longer tell a write lost in a failover meanwhile (its settlement compares the primary's
   * history before and after the write).
   */
  readonly write?: boolean;
}

/** Options of {@link Session.toTokenData}. */
export interface ToTokenDataOptions {
  /**
   * Carry pending positions in the token instead of requiring them settled: the token names the
   * nodes (`pending`), and the next request settles them with a probe it sends itself (any probe
   * sent after that request arrived is after this request's reads) or, better, reads the same
   * healthy replica again, which needs no settling at all. Saves the probe round trip a request
   * would otherwise spend before its response. Default false. Replica ids must name the same
   * servers in every app instance that reads the token, and every instance must run a version
   * that reads `pending` (older ones reject such tokens as malformed).
   */
  carryPending?: boolean;
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
    const maxClusters = options.maxClusters ?? DEFAULT_MAX_CLUSTERS;
    const positions = validPositions(data, maxClusters);
    for (const [cluster, text] of positions) session.entries.set(cluster, { text });
    const pending = validPending(data, maxClusters);
    // Positions alone were counted by validPositions; pending reads may name more clusters.
    if (pending.size > 0) {
      const named = new Set([...positions.map(([cluster]) => cluster), ...pending.keys()]);
      if (named.size > maxClusters) {
        throw new TokenError(
          ErrorCode.TokenTooLarge,
          `Token data names ${named.size} clusters, more than the limit of ${maxClusters}.`,
        );
      }
    }
    for (const [cluster, nodes] of pending) {
      session.pending.set(
        cluster,
        nodes.map((target) => carriedPosition(cluster, target)),
      );
    }
    return session;
  }

  /**
   * Add read positions carried from an earlier request (a token's `pending` entry) for `cluster`:
   * what `fromToken` does, for carriers that merge several sources into one session. Node ids
   * that cannot be carried are ignored (they were never written into a token).
   */
  carry(cluster: string, nodes: readonly string[]): void {
    if (!isClusterName(cluster)) return;
    for (const node of nodes.slice(0, MAX_PENDING_NODES)) {
      if (!isNodeId(node) || this.pendingTargets(cluster).includes(node)) continue;
      const list = this.pending.get(cluster) ?? [];
      list.push(carriedPosition(cluster, node));
      this.pending.set(cluster, list);
    }
  }

  /**
   * The nodes with pending read positions, per cluster, as `toTokenData({ carryPending: true })`
   * would carry them; writes and nodes that cannot be carried are left out. For carriers that
   * must write a token even when a write could not be settled.
   */
  pendingReads(): Record<string, string[]> {
    const result: Record<string, string[]> = Object.create(null);
    for (const [cluster, list] of this.pending) {
      const nodes = [...new Set(list.filter((p) => !p.write).map((p) => p.target))].filter(
        isNodeId,
      );
      if (nodes.length > 0 && nodes.length <= MAX_PENDING_NODES) result[cluster] = nodes.sort();
    }
    return { ...result };
  }

  /**
   * Give the positions carried in the token for `cluster` their settlement: a router does this
   * when the session routes on that cluster, with a probe sent after the request began (so after
   * the reads of the request that carried them).
   */
  bindCarried(cluster: string, settleFor: (target: string) => Promise<void>): void {
    const list = this.pending.get(cluster);
    if (!list?.some((p) => p.carried)) return;
    this.pending.set(
      cluster,
      list.map((p) => (p.carried ? { target: p.target, settle: () => settleFor(p.target) } : p)),
    );
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
    // A write's settlement also checks that the write survived; a read does not replace it.
    const list = (this.pending.get(cluster) ?? []).filter(
      (p) => p.target !== pending.target || (p.write && !pending.write),
    );
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
    await this.settleWhere(() => true, cluster === undefined ? undefined : [cluster]);
  }

  /**
   * Settle the pending positions of writes only (reads stay pending). Before
   * `toTokenData({ carryPending: true })`, prefer {@link Session.settledForCarrying}.
   */
  async settledWrites(): Promise<void> {
    await this.settleWhere((p) => p.write === true);
  }

  /**
   * What a carrier calls before `toTokenData({ carryPending: true })`: settle the writes (they
   * are never carried; rejects when one cannot be settled, as {@link Session.settledWrites}) and,
   * best effort, the reads the primary served; replica reads stay pending.
   *
   * Why the primary's reads: carried, the next request would settle one with a probe of the
   * primary sent then, which includes every write committed in between, by anyone; no replica
   * covers that until it has applied those writes too, so a session that once fell back to the
   * primary would keep going there while writes keep coming (measured with a zero wait budget).
   * Settled now, from one shared primary observation sent after the read, the token asks only
   * for what the read could have seen. A primary that does not answer leaves the read carried.
   */
  async settledForCarrying(): Promise<void> {
    const [writes] = await Promise.allSettled([
      this.settledWrites(),
      this.settleWhere((p) => p.target === PRIMARY && p.write !== true && p.carried !== true),
    ]);
    if (writes.status === 'rejected') throw writes.reason;
  }

  /** Settle the pending positions `which` selects; the rest, and failures, stay pending. */
  private async settleWhere(
    which: (pending: PendingPosition) => boolean,
    clusters: readonly string[] = [...this.pending.keys()],
  ): Promise<void> {
    let failure: unknown;
    for (const name of clusters) {
      const chosen = (this.pending.get(name) ?? []).filter(which);
      if (chosen.length === 0) continue;
      const results = await Promise.allSettled(chosen.map((p) => p.settle()));
      const done = new Set(chosen.filter((_, i) => results[i]?.status === 'fulfilled'));
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
   * Token data to hand to another process (a downstream service, a queued job): writes settled
   * (rejects when one cannot be), reads settled where this process's routers can, and the reads
   * left (carried in from an earlier request and never routed here, or whose node did not
   * answer) carried as `pending`, for the receiver's routers to settle.
   */
  async handOffTokenData(): Promise<{
    positions: Record<string, string>;
    pending?: Record<string, string[]>;
  }> {
    await this.settledWrites();
    await this.settled().catch(() => undefined);
    const pending = this.pendingReads();
    return {
      ...this.settledTokenData(),
      ...(Object.keys(pending).length > 0 ? { pending } : {}),
    };
  }

  /**
   * Plain data for {@link TokenCodec.encode}.
   *
   * @throws TidemarkError `TIDEMARK_UNSETTLED` while a read's position is pending: encoding now
   *   would hand out a token older than what the session saw. `await session.settled()` first.
   */
  toTokenData(options: ToTokenDataOptions = {}): {
    positions: Record<string, string>;
    pending?: Record<string, string[]>;
  } {
    if (!this.unsettled) return this.settledTokenData();
    if (!options.carryPending) {
      throw new TidemarkError(
        ErrorCode.Unsettled,
        'The session has read positions that are not settled yet; await session.settled() before encoding its token (the HTTP carriers and the Redis store do this for you), or carry them: toTokenData({ carryPending: true }).',
      );
    }
    const pending = new Map<string, string[]>();
    for (const [cluster, list] of this.pending) {
      if (list.some((p) => p.write)) {
        throw new TidemarkError(
          ErrorCode.Unsettled,
          `A write's position on cluster "${cluster}" is not settled yet, and writes are never carried (a write lost meanwhile could no longer be told); await session.settledForCarrying() (or settled()) first.`,
        );
      }
      const nodes = [...new Set(list.map((p) => p.target))];
      if (nodes.length > MAX_PENDING_NODES || !nodes.every(isNodeId)) {
        throw new TidemarkError(
          ErrorCode.Unsettled,
          `The pending positions of cluster "${cluster}" cannot be carried in a token (more than ${MAX_PENDING_NODES} nodes, or a node id outside A-Z a-z 0-9 _ -); await session.settled() first.`,
        );
      }
      pending.set(cluster, nodes);
    }
    // fromEntries defines own properties, so a cluster named __proto__ is kept as data.
    return { ...this.settledTokenData(), pending: Object.fromEntries(pending) };
  }

  /**
   * The positions settled so far, even while reads are pending: LOWER than what those reads saw.
   * Only for a caller that cannot wait any more (response headers already going out on a
   * streamed response); everyone else uses {@link Session.toTokenData} after `settled()`.
   */
  settledTokenData(): { positions: Record<string, string> } {
    // fromEntries defines own properties, so a cluster named __proto__ is kept as data.
    const positions: Array<[string, string]> = [];
    for (const [cluster, entry] of this.entries) positions.push([cluster, entry.text]);
    return { positions: Object.fromEntries(positions) };
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

/** The `pending` entries of token data, checked for the shape TokenCodec.decode produces. */
function validPending(data: unknown, maxClusters: number): Map<string, string[]> {
  const pending = (data as { pending?: unknown }).pending;
  const result = new Map<string, string[]>();
  if (pending === undefined) return result;
  if (typeof pending !== 'object' || pending === null || Array.isArray(pending)) {
    throw new TokenError(
      ErrorCode.TokenMalformed,
      `Token data's pending must be an object of node id lists, got ${shapeOf(pending)}. ${SHAPE_HINT}`,
    );
  }
  const entries = Object.entries(pending as Record<string, unknown>);
  if (entries.length > maxClusters) {
    throw new TokenError(
      ErrorCode.TokenTooLarge,
      `Token data has pending positions for ${entries.length} clusters, more than the limit of ${maxClusters}.`,
    );
  }
  for (const [cluster, nodes] of entries) {
    if (
      !isClusterName(cluster) ||
      !Array.isArray(nodes) ||
      nodes.length > MAX_PENDING_NODES ||
      !nodes.every((node) => typeof node === 'string' && isNodeId(node))
    ) {
      throw new TokenError(
        ErrorCode.TokenMalformed,
        `Token data's pending entry for ${JSON.stringify(cluster.slice(0, 80))} must be a list of at most ${MAX_PENDING_NODES} node ids. ${SHAPE_HINT}`,
      );
    }
    if (nodes.length > 0) result.set(cluster, [...new Set(nodes as string[])]);
  }
  return result;
}

/** A position carried from an earlier request; a router of its cluster binds its settlement. */
function carriedPosition(cluster: string, target: string): PendingPosition {
  return {
    target,
    carried: true,
    settle: () =>
      Promise.reject(
        new TidemarkError(
          ErrorCode.Unsettled,
          `A position carried in the token for cluster "${cluster}" (node "${target}") is settled by a router of that cluster when the session routes there; this session did not. Carry it on with toTokenData({ carryPending: true }), or read through that cluster's router first.`,
          { retryable: false },
        ),
      ),
  };
}

function shapeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? 'a string' : typeof value;
}
