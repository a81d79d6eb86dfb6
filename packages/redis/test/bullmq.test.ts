import { randomUUID } from 'node:crypto';
import {
  currentSession,
  runWithSession,
  Session,
  TokenCodec,
  type TokenCodecOptions,
} from '@tidemark/core';
import { type Job, Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addWithToken, withJobSession } from '../src/bullmq.js';
import { JOB_TOKEN_FIELD, type StampedPayload } from '../src/index.js';
import { counterCodec } from './support/counter-codec.js';
import { startRedis, type TestRedis } from './support/redis-server.js';

// A real BullMQ queue and worker on a private redis-server: the token travels through Redis as
// job data, exactly as it would between a web process and a worker process.

const KEY = { id: 'k1', secret: 's'.repeat(32) };
const codecOptions: TokenCodecOptions = { keys: [KEY], maxAgeSeconds: 600 };
const codec = new TokenCodec(codecOptions);

interface OrderJob {
  orderId: number;
}

/** What the worker saw while processing one job, returned as the job's result. */
interface Observed {
  positions: Record<string, string>;
  dataKeys: string[];
}

let redis: TestRedis;
let queue: Queue;
let worker: Worker<StampedPayload<OrderJob>, Observed>;
const badTokens: Array<{ jobId: string | undefined; code: string }> = [];
/** The job the worker is processing, for onBadToken (which does not receive it). */
let processing: string | undefined;

beforeAll(async () => {
  redis = await startRedis();
  const connection = { host: '127.0.0.1', port: redis.port };
  const name = `orders-${randomUUID()}`;
  queue = new Queue(name, { connection });
  const processor = withJobSession<OrderJob, Observed>(
    codec,
    async (job) => ({
      positions: currentSession().toTokenData().positions,
      dataKeys: Object.keys(job.data).sort(),
    }),
    { onBadToken: (error) => badTokens.push({ jobId: processing, code: error.code }) },
  );
  worker = new Worker<StampedPayload<OrderJob>, Observed>(
    name,
    (job) => {
      // onBadToken does not receive the job: remember which one is being restored.
      processing = job.id;
      return processor(job);
    },
    { connection, concurrency: 1 },
  );
  await worker.waitUntilReady();
  await queue.waitUntilReady();
});

afterAll(async () => {
  await worker?.close();
  await queue?.close();
  await redis?.stop();
});

/** Resolves with the job's result once the worker completed it; rejects if it failed. */
function finished(jobId: string): Promise<Observed> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`job ${jobId} was not processed within 20 s`));
    }, 20_000);
    const onCompleted = (job: Job<StampedPayload<OrderJob>, Observed>, result: Observed) => {
      if (job.id !== jobId) return;
      cleanup();
      resolve(result);
    };
    const onFailed = (job: Job | undefined, error: Error) => {
      if (job?.id !== jobId) return;
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      clearTimeout(timer);
      worker.off('completed', onCompleted);
      worker.off('failed', onFailed);
    };
    worker.on('completed', onCompleted);
    worker.on('failed', onFailed);
  });
}

/** Enqueue with `addWithToken` under `session` (none: outside any session) and await the result. */
async function enqueue(
  jobId: string,
  session: Session | undefined,
  producer: TokenCodec = codec,
): Promise<{ job: Job; observed: Observed }> {
  const done = finished(jobId);
  const add = () => addWithToken(queue, 'order', { orderId: 7 }, producer, { jobId });
  const job = await (session ? runWithSession(session, add) : add());
  return { job, observed: await done };
}

function sessionAt(positions: Record<string, number>): Session {
  const session = new Session();
  for (const [cluster, position] of Object.entries(positions)) {
    session.raise(cluster, counterCodec, position);
  }
  return session;
}

describe('BullMQ: addWithToken and withJobSession', () => {
  it('carries the current session into the job; the worker reads with the same positions', async () => {
    const session = sessionAt({ main: 17, other: 4 });
    const { job, observed } = await enqueue('carried', session);
    // The token is part of the job data stored in Redis, next to the payload.
    const stored = await queue.getJob('carried');
    const token = stored?.data[JOB_TOKEN_FIELD];
    expect(typeof token).toBe('string');
    expect(job.data[JOB_TOKEN_FIELD]).toBe(token);
    expect(stored?.data.orderId).toBe(7);
    expect(codec.decode(token).positions).toEqual({ main: '17', other: '4' });
    expect(stored?.opts.jobId).toBe('carried');
    // The worker ran with the restored session as the current session.
    expect(observed.positions).toEqual(session.toTokenData().positions);
    expect(observed.positions).toEqual({ main: '17', other: '4' });
    expect(observed.dataKeys).toEqual(['orderId', JOB_TOKEN_FIELD]);
    expect(badTokens.filter((bad) => bad.jobId === 'carried')).toEqual([]);
  });

  it('adds a job without a token outside any session or with an empty one; it runs with an empty session', async () => {
    for (const [jobId, session] of [
      ['no-session', undefined],
      ['empty-session', new Session()],
    ] as const) {
      const { job, observed } = await enqueue(jobId, session);
      expect(job.data).toEqual({ orderId: 7 });
      expect(observed).toEqual({ positions: {}, dataKeys: ['orderId'] });
    }
    expect(badTokens.filter((bad) => bad.jobId?.endsWith('session'))).toEqual([]);
  });

  it('runs a job whose token was altered, foreign or expired with an empty session, and reports it', async () => {
    const session = sessionAt({ main: 99 });
    // Altered after it was stamped (as anyone who can write the queue's Redis could).
    const { job } = await enqueue('genuine', session);
    const genuine = job.data[JOB_TOKEN_FIELD] as string;
    const altered = genuine.replace('~main~99~', '~main~98~');
    expect(altered).not.toBe(genuine);
    const alteredDone = finished('altered');
    await queue.add('order', { orderId: 7, [JOB_TOKEN_FIELD]: altered }, { jobId: 'altered' });
    // Signed with a key the worker does not know.
    const foreign = new TokenCodec({ keys: [{ id: 'other', secret: 'x'.repeat(32) }] });
    // Stamped by a producer whose clock is an hour behind: older than maxAgeSeconds on arrival.
    const lateClock = new TokenCodec({ ...codecOptions, now: () => Date.now() - 3_600_000 });

    const results = {
      altered: await alteredDone,
      foreign: (await enqueue('foreign', session, foreign)).observed,
      expired: (await enqueue('expired', session, lateClock)).observed,
    };
    for (const observed of Object.values(results)) {
      // The token field is still in the data (it is what the worker refused), but no position.
      expect(observed).toEqual({ positions: {}, dataKeys: ['orderId', JOB_TOKEN_FIELD] });
    }
    expect(
      badTokens.filter((bad) =>
        ['genuine', 'altered', 'foreign', 'expired'].includes(`${bad.jobId}`),
      ),
    ).toEqual([
      { jobId: 'altered', code: 'TIDEMARK_TOKEN_SIGNATURE' },
      { jobId: 'foreign', code: 'TIDEMARK_TOKEN_SIGNATURE' },
      { jobId: 'expired', code: 'TIDEMARK_TOKEN_EXPIRED' },
    ]);
  });
});

describe('addWithToken errors', () => {
  // Regression: the token was encoded before queue.add, outside the promise, so an encoding
  // error was thrown at the call instead of rejecting what the caller awaits or .catch()es.
  it('rejects, not throws, when the session cannot be encoded', async () => {
    const narrow = new TokenCodec({ ...codecOptions, maxClusters: 1 });
    const session = sessionAt({ main: 17, other: 4 });
    let returned: Promise<Job> | undefined;
    expect(() => {
      runWithSession(session, () => {
        returned = addWithToken(queue, 'too-wide', { orderId: 1 }, narrow);
      });
    }).not.toThrow();
    await expect(returned).rejects.toMatchObject({ name: 'TokenError' });
  });
});
