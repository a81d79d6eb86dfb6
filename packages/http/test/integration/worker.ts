// The job worker: a separate process that reads with the session stamped into each job.
import { currentSession } from '@tidemark/core';
import { Worker } from 'bullmq';
import { withJobSession } from '../../../redis/src/bullmq.js';
import { createRouter, ordersOf, QUEUE, redisConnection, tokenCodec } from './wiring.js';

const { router } = await createRouter();
const connection = redisConnection();
const worker = new Worker(
  QUEUE,
  withJobSession<{ user: string }, { ids: number[]; target: string; reason: string }>(
    tokenCodec(),
    async (job) => {
      // Before the first read: the session comes from the job, not from a request.
      const { value, decision } = await router.readDetailed(currentSession(), (db) =>
        ordersOf(db, job.data.user),
      );
      return { ids: value, target: decision.target, reason: decision.reason };
    },
  ),
  { connection, concurrency: 1 },
);
await worker.waitUntilReady();
console.log('worker ready');
process.on('SIGTERM', () => {
  void Promise.all([worker.close(), router.close()]).finally(() => {
    connection.disconnect();
    process.exit(0);
  });
});
