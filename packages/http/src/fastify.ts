import type { FastifyInstance, FastifyPluginCallback, FastifyRequest } from 'fastify';
import { type CarrierScope, isRejection, type TokenCarrier } from './carrier.js';

export interface FastifyCarrierOptions {
  /** The signed-in user, for the token store (cross-device). Undefined skips the store. */
  userId?: (request: FastifyRequest) => string | undefined;
}

const scopes = new WeakMap<FastifyRequest, CarrierScope>();

/**
 * Fastify 5 plugin: handlers run with the request's session as the current session, and
 * responses that raised it carry the token back (Set-Cookie and header) after the token store
 * was raised. Registered without encapsulation, so it applies to every route.
 */
export function tidemarkFastify(
  carrier: TokenCarrier,
  options: FastifyCarrierOptions = {},
): FastifyPluginCallback {
  const plugin: FastifyPluginCallback = (fastify: FastifyInstance, _opts, ready) => {
    fastify.addHook('onRequest', (request, reply, done) => {
      const secure = request.protocol === 'https';
      let userId: string | undefined;
      try {
        userId = options.userId?.(request);
      } catch (error) {
        done(error as Error);
        return;
      }
      carrier
        .begin(
          { header: (name) => firstValue(request.headers[name]), secure, source: request.ip },
          userId,
        )
        .then((scope) => {
          if (isRejection(scope)) {
            reply.code(scope.rejected.status).send(scope.rejected.body);
            return;
          }
          scopes.set(request, scope);
          // Continuing inside the scope makes every later hook and the handler inherit it.
          scope.run(() => done());
        }, done);
    });
    // Body parsing runs in the socket's async context; re-enter the session right before the
    // handler so it holds for POST bodies too.
    fastify.addHook('preHandler', (request, _reply, done) => {
      const scope = scopes.get(request);
      if (scope) scope.run(() => done());
      else done();
    });
    fastify.addHook('onSend', async (request, reply, payload) => {
      const scope = scopes.get(request);
      if (!scope) return payload;
      await scope.commit();
      for (const [name, value] of scope.responseHeaders(request.protocol === 'https')) {
        reply.header(name, value);
      }
      return payload;
    });
    ready();
  };
  // What fastify-plugin does: apply the hooks to the parent scope, not only to this plugin.
  (plugin as unknown as Record<symbol, unknown>)[Symbol.for('skip-override')] = true;
  return plugin;
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
