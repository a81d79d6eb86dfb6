import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { type CarrierScope, isRejection, type TokenCarrier } from './carrier.js';

export interface ExpressCarrierOptions {
  /** The signed-in user, for the token store (cross-device). Undefined skips the store. */
  userId?: (request: Request) => string | undefined;
}

/**
 * Express (4 and 5) middleware: every later handler runs with the request's session as the
 * current session, and responses that raised it carry the token back (Set-Cookie and header).
 * The response completes only after the token store was raised.
 */
export function tidemarkExpress(
  carrier: TokenCarrier,
  options: ExpressCarrierOptions = {},
): RequestHandler {
  return (request: Request, response: Response, next: NextFunction): void => {
    const request_ = {
      header: (name: string) => firstValue(request.headers[name]),
      secure: request.secure,
      source: request.ip,
    };
    let userId: string | undefined;
    try {
      userId = options.userId?.(request);
    } catch (error) {
      next(error);
      return;
    }
    carrier.begin(request_, userId).then((scope) => {
      if (isRejection(scope)) {
        response.status(scope.rejected.status).json(scope.rejected.body);
        return;
      }
      hookResponse(response, scope, request.secure);
      scope.run(() => next());
    }, next);
  };
}

/** Write the token into the headers just before they go out, and hold `end` for the store. */
function hookResponse(response: Response, scope: CarrierScope, secure: boolean): void {
  const writeHead = response.writeHead;
  response.writeHead = function (this: Response, ...args: unknown[]) {
    if (!this.headersSent) {
      for (const [name, value] of scope.responseHeaders(secure)) this.append(name, value);
    }
    return (writeHead as (...a: unknown[]) => Response).apply(this, args);
  } as Response['writeHead'];
  const end = response.end;
  response.end = function (this: Response, ...args: unknown[]) {
    scope.commit().finally(() => (end as (...a: unknown[]) => Response).apply(this, args));
    return this;
  } as Response['end'];
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
