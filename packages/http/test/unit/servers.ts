// In-process servers for each framework adapter, all over the same carrier.
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { currentSession } from '@tidemark/core';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { counterCodec } from '../../../redis/test/support/counter-codec.js';
import { tidemarkExpress } from '../../src/express.js';
import { tidemarkFastify } from '../../src/fastify.js';
import { tidemarkHono } from '../../src/hono.js';
import type { TokenCarrier } from '../../src/index.js';

export type Framework = 'express' | 'fastify' | 'hono';
export const FRAMEWORKS: Framework[] = ['express', 'fastify', 'hono'];

export interface RunningServer {
  readonly url: string;
  close(): Promise<void>;
}

/** What the handlers do: `/raise?to=N` raises the session (a write); `/peek` only looks. */
function raise(to: string | undefined): string[] {
  const session = currentSession();
  session.raise('main', counterCodec, Number(to ?? '1'));
  return session.clusters();
}
function peek(): { clusters: string[]; main: string | null } {
  const session = currentSession();
  return { clusters: session.clusters(), main: session.positionText('main') ?? null };
}

export async function startServer(
  framework: Framework,
  carrier: TokenCarrier,
  extra: (path: string) => Promise<unknown> = async () => null,
): Promise<RunningServer> {
  const userId = (value: string | undefined) => value;
  if (framework === 'express') {
    const app = express();
    app.use(tidemarkExpress(carrier, { userId: (request) => userId(request.header('x-user')) }));
    app.post('/raise', (request, response) => {
      response.json(raise(request.query['to'] as string | undefined));
    });
    app.get('/peek', (_request, response) => {
      response.json(peek());
    });
    app.get('/call', async (request, response) => {
      response.json(await extra(String(request.query['path'])));
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: () => new Promise((resolve) => server.close(() => resolve())),
    };
  }
  if (framework === 'fastify') {
    const app = Fastify();
    await app.register(
      tidemarkFastify(carrier, {
        userId: (request) => userId(request.headers['x-user'] as string | undefined),
      }),
    );
    app.post('/raise', async (request) => raise((request.query as Record<string, string>)['to']));
    app.get('/peek', async () => peek());
    app.get('/call', async (request) =>
      extra(String((request.query as Record<string, string>)['path'])),
    );
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url: address, close: () => app.close() };
  }
  const app = new Hono();
  app.use(tidemarkHono(carrier, { userId: (context) => userId(context.req.header('x-user')) }));
  app.post('/raise', (context) => context.json(raise(context.req.query('to'))));
  app.get('/peek', (context) => context.json(peek()));
  app.get('/call', async (context) => context.json(await extra(String(context.req.query('path')))));
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
