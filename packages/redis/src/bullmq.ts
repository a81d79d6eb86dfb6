import { maybeCurrentSession, type TokenCodec } from '@tidemark/core';
import type { Job, JobsOptions, Queue } from 'bullmq';
import { type JobSessionOptions, runJobInSession, type StampedPayload, stampJob } from './jobs.js';

/**
 * `queue.add` with the current session's token stamped into the job data. A token that cannot
 * be encoded (too many clusters for the token codec) rejects the returned promise; it never throws.
 */
export async function addWithToken<T extends object>(
  queue: Queue,
  name: string,
  data: T,
  tokens: TokenCodec,
  options?: JobsOptions,
): Promise<Job> {
  // Taken before the first await, while the caller's session is still the current one.
  const session = maybeCurrentSession();
  return queue.add(name, await stampJob(data, tokens, session), options);
}

/**
 * Wrap a BullMQ processor so it runs with the job's session as the current session: every
 * read it makes through the router (via `currentSession()`) sees the enqueuing request's writes.
 */
export function withJobSession<T extends object, R>(
  tokens: TokenCodec,
  processor: (job: Job<StampedPayload<T>, R>) => Promise<R>,
  options: JobSessionOptions = {},
): (job: Job<StampedPayload<T>, R>) => Promise<R> {
  return (job) => runJobInSession(job.data, tokens, () => processor(job), options);
}
