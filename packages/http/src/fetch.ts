import { maybeCurrentSession, type Session, type TokenCodec } from '@tidemark/core';
import type { PositionCodec } from '@tidemark/core/adapter';
import { DEFAULT_TOKEN_HEADER } from './carrier.js';
import { type CodecMap, codecMap, decodePosition, type KnownCluster } from './known.js';
import { type TokenCodecOption, tokenCodecOf } from './token-option.js';

/**
 * Options of {@link createForwardingFetch}: the token codec (`tokens`; use the same keys as the
 * receiving services) plus these settings.
 */
export type ForwardingFetchOptions = ForwardingFetchSettings & TokenCodecOption;

/** Everything {@link createForwardingFetch} takes besides its token codec. */
export interface ForwardingFetchSettings {
  /** Header to send the token in. Default `x-tidemark-token`. */
  header?: string;
  /** The fetch to wrap. Default the global fetch. */
  fetch?: typeof fetch;
  /**
   * The routers whose clusters this service uses (anything with `cluster` and `codec`, like the
   * carrier's option). With them (or `codecs`), a token the downstream service returns in the
   * same header (it wrote) raises the current session, so this request's later reads see that
   * write too; and a token the caller set in the header itself is merged with the session's
   * instead of being replaced by it.
   */
  routers?: Iterable<KnownCluster>;
  /** Codecs per cluster, for clusters without a router here. */
  codecs?: Readonly<Record<string, PositionCodec<unknown>>>;
}

/**
 * A `fetch` that forwards the current session's token (see `runWithSession`) to downstream
 * services in a header; the receiving service's Tidemark middleware accepts it from there.
 * Outside a session context, or with an empty session, it behaves exactly like `fetch`.
 */
export function createForwardingFetch(options: ForwardingFetchOptions): typeof fetch {
  const inner = options.fetch ?? globalThis.fetch;
  const header = (options.header ?? DEFAULT_TOKEN_HEADER).toLowerCase();
  const codecs = codecMap(options.routers, options.codecs);
  const tokens = tokenCodecOf(options, 'createForwardingFetch');
  const forwarding = async (
    input: Parameters<typeof fetch>[0],
    init?: RequestInit,
  ): Promise<Response> => {
    const session = maybeCurrentSession();
    // What this request's reads saw must travel too (invariant 3): settled, or carried on.
    const data = await session?.handOffTokenData();
    if (!session || !data || (session.clusters().length === 0 && !data.pending)) {
      return inner(input, init);
    }
    const headers = new Headers(
      init?.headers ?? (input instanceof Request ? input.headers : undefined),
    );
    const explicit = headers.get(header);
    const positions =
      explicit && codecs.size > 0 ? mergedWith(session, explicit, tokens, codecs) : data.positions;
    headers.set(header, tokens.encode({ positions, pending: data.pending }));
    const response = await inner(input, { ...init, headers });
    const returned = response.headers.get(header);
    if (returned && codecs.size > 0) absorb(returned, tokens, codecs);
    return response;
  };
  return forwarding as typeof fetch;
}

/**
 * The session's positions merged with a token the caller put in the header itself: per cluster
 * the newer one, so forwarding never lowers what the caller meant to send. Clusters without a
 * codec and a token that does not verify are left out.
 */
function mergedWith(
  session: Session,
  text: string,
  tokens: TokenCodec,
  codecs: CodecMap,
): Record<string, string> {
  const positions = new Map(Object.entries(session.settledTokenData().positions));
  let explicit: Readonly<Record<string, string>>;
  try {
    explicit = tokens.decode(text).positions;
  } catch {
    return Object.fromEntries(positions);
  }
  for (const [cluster, incomingText] of Object.entries(explicit)) {
    const positionCodec = codecs.get(cluster);
    if (!positionCodec) continue;
    try {
      const incoming = decodePosition(positionCodec, cluster, incomingText).position;
      let current: unknown;
      try {
        current = session.position(cluster, positionCodec);
      } catch {
        current = undefined;
      }
      const merged = current === undefined ? incoming : positionCodec.merge(current, incoming);
      positions.set(cluster, positionCodec.encode(merged));
    } catch {
      // A position this service cannot decode protects nothing here.
    }
  }
  // fromEntries defines own properties, so a cluster named __proto__ is kept as data.
  return Object.fromEntries(positions);
}

/** Raise the current session with a token a downstream service returned; bad ones are dropped. */
function absorb(text: string, tokens: TokenCodec, codecs: CodecMap): void {
  const session = maybeCurrentSession();
  if (!session) return;
  let positions: Readonly<Record<string, string>>;
  try {
    positions = tokens.decode(text).positions;
  } catch {
    return; // A downstream service with other keys: its token is not ours to trust.
  }
  for (const [cluster, position] of Object.entries(positions)) {
    const positionCodec = codecs.get(cluster);
    if (!positionCodec) continue;
    try {
      session.raise(
        cluster,
        positionCodec,
        decodePosition(positionCodec, cluster, position).position,
      );
    } catch {
      // A position this service cannot decode protects nothing here.
    }
  }
}
