import type { Context, MiddlewareHandler } from 'hono';
import { isRejection, type TokenCarrier } from './carrier.js';

export interface HonoCarrierOptions {
  /** The signed-in user, for the token store (cross-device). Undefined skips the store. */
  userId?: (context: Context) => string | undefined;
  /** The client address, for logging bad tokens once per source (runtime specific). */
  source?: (context: Context) => string | undefined;
}

/**
 * Hono 4 middleware: later handlers run with the request's session as the current session, and
 * responses that raised it carry the token back (Set-Cookie and header) after the token store
 * was raised.
 */
export function tidemarkHono(
  carrier: TokenCarrier,
  options: HonoCarrierOptions = {},
): MiddlewareHandler {
  return async (context, next) => {
    const secure = new URL(context.req.url).protocol === 'https:';
    const scope = await carrier.begin(
      { header: (name) => context.req.header(name), secure, source: options.source?.(context) },
      options.userId?.(context),
    );
    if (isRejection(scope)) return context.json(scope.rejected.body, scope.rejected.status);
    await scope.run(() => next());
    await scope.commit();
    const headers = scope.responseHeaders(secure);
    if (headers.length === 0) return;
    try {
      for (const [name, value] of headers) context.res.headers.append(name, value);
    } catch {
      // Responses passed through from fetch have immutable headers: copy once, then append.
      context.res = new Response(context.res.body, context.res);
      for (const [name, value] of headers) context.res.headers.append(name, value);
    }
  };
}
