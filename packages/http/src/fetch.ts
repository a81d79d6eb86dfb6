import { maybeCurrentSession, type PositionCodec, type TokenCodec } from '@tidemark/core';
import { DEFAULT_TOKEN_HEADER } from './carrier.js';

export interface ForwardingFetchOptions {
  /** Signs the forwarded token; use the same keys as the receiving services. */
  codec: TokenCodec;
  /** Header to send the token in. Default `x-tidemark-token`. */
  header?: string;
  /** The fetch to wrap. Default the global fetch. */
  fetch?: typeof fetch;
  /**
   * Codecs per cluster: when given, a token the downstream service returns in the same header
   * (it wrote) raises the current session, so this request's later reads see that write too.
   */
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
  const forwarding = async (
    input: Parameters<typeof fetch>[0],
    init?: RequestInit,
  ): Promise<Response> => {
    const session = maybeCurrentSession();
    if (!session || session.clusters().length === 0) return inner(input, init);
    const headers = new Headers(
      init?.headers ?? (input instanceof Request ? input.headers : undefined),
    );
    headers.set(header, options.codec.encode(session.toTokenData()));
    const response = await inner(input, { ...init, headers });
    const returned = response.headers.get(header);
    if (returned && options.codecs) absorb(returned, options.codec, options.codecs);
    return response;
  };
  return forwarding as typeof fetch;
}

/** Raise the current session with a token a downstream service returned; bad ones are dropped. */
function absorb(
  text: string,
  codec: TokenCodec,
  codecs: Readonly<Record<string, PositionCodec<unknown>>>,
): void {
  const session = maybeCurrentSession();
  if (!session) return;
  let positions: Readonly<Record<string, string>>;
  try {
    positions = codec.decode(text).positions;
  } catch {
    return; // A downstream service with other keys: its token is not ours to trust.
  }
  for (const [cluster, position] of Object.entries(positions)) {
    const positionCodec = codecs[cluster];
    if (!positionCodec) continue;
    try {
      session.raise(cluster, positionCodec, positionCodec.decode(position));
    } catch {
      // A position this service cannot decode protects nothing here.
    }
  }
}
