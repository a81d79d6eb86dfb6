import { ConfigError, type TokenCodec } from '@tidemark/core';

/**
 * The token codec option, spelled as the Router spells it: `tokens`. "codec" alone names a
 * cluster's position codec everywhere else (`routers`, `codecs`, `KnownCluster.codec`), so the
 * older spelling `codec` for the token codec is still accepted but deprecated.
 */
export type TokenCodecOption =
  | {
      /** Verifies and signs tokens: keys (rotation), maxLength, maxAgeSeconds. */
      tokens: TokenCodec;
      codec?: never;
    }
  | {
      /** @deprecated Use `tokens` (the same TokenCodec; the Router's option has that name). */
      codec: TokenCodec;
      tokens?: never;
    };

/** The token codec given under either spelling; a clear ConfigError when there is none. */
export function tokenCodecOf(
  options: { readonly tokens?: TokenCodec; readonly codec?: TokenCodec },
  owner: string,
): TokenCodec {
  const { tokens, codec } = options;
  if (tokens !== undefined && codec !== undefined && tokens !== codec) {
    throw new ConfigError(
      `${owner} got two token codecs (tokens and the deprecated codec); pass only tokens.`,
    );
  }
  const chosen = tokens ?? codec;
  if (!chosen || typeof chosen.encode !== 'function' || typeof chosen.decode !== 'function') {
    throw new ConfigError(
      `${owner} needs a token codec: pass tokens: new TokenCodec({ keys }) (the same keys as the services that read its tokens).`,
    );
  }
  return chosen;
}
