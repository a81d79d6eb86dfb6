// One app instance: `node --import tsx app.ts`, configured by env; prints `listening <port>`.
import { currentSession } from '@tidemark/core';
import { Queue } from 'bullmq';
import express from 'express';
import { stampJob } from '../../../redis/src/index.js';
import { tidemarkExpress } from '../../src/express.js';
import {
  createCarrier,
  createRouter,
  env,
  insertOrder,
  ordersOf,
  QUEUE,
  redisConnection,
  tokenCodec,
} from './wiring.js';

const useStore = process.env['USE_STORE'] === '1';
const { router, codec } = await createRouter();
const redis = redisConnection();
const carrier = createCarrier({ main: codec }, useStore ? redis : undefined);
const queue = new Queue(QUEUE, { connection: redis });
const jobTokens = tokenCodec();

const app = express();
app.use(express.json());
app.get('/_metrics', (_request, response) => {
  response.json(carrier.metrics());
});
app.use(tidemarkExpress(carrier, { userId: (request) => request.header('x-user') }));

app.post('/orders', async (request, response) => {
  const user = String(request.header('x-user') ?? 'anonymous');
  const id = await router.write(currentSession(), (db) => insertOrder(db, user, 'book'));
  let jobId: string | undefined;
  if (request.query['job'] === '1') {
    // The control enqueues the same job without the token.
    const data = { user };
    const payload = request.query['stamp'] === '0' ? data : await stampJob(data, jobTokens);
    jobId = (await queue.add('my-orders', payload)).id;
  }
  response.status(201).json({ id, jobId });
});

app.get('/my/orders', async (request, response) => {
  const user = String(request.header('x-user') ?? 'anonymous');
  const { value, decision } = await router.readDetailed(currentSession(), (db) =>
    ordersOf(db, user),
  );
  response.json({ ids: value, target: decision.target, reason: decision.reason });
});

app.get('/whoami-session', (_request, response) => {
  response.json({ clusters: currentSession().clusters() });
});

const server = app.listen(Number(env('PORT')), '127.0.0.1', () => {
  console.log(`listening ${env('PORT')}`);
});
process.on('SIGTERM', () => {
  server.close();
  void Promise.all([router.close(), queue.close()]).finally(() => {
    redis.disconnect();
    process.exit(0);
  });
});
