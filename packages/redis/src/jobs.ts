import {
  maybeCurrentSession,
  runWithSession,
  Session,
  type TokenCodec,
  type TokenError,
} from '@tidemark/core';

/** Field of a job payload that carries the enqueuing request's token. */
export const JOB_TOKEN_FIELD = 'tidemarkToken';

/** A job payload with the token stamped in. */
export type StampedPayload<T> = T & { [JOB_TOKEN_FIELD]?: string };

/**
 * Copy `payload` with the session's token (signed by `tokens`) stamped in, so the worker's reads
 * see the writes (and what the reads saw) before the job was enqueued. Settles the session's
 * pending positions first (reads this process cannot settle travel as pending, for the worker's
 * routers). `session` defaults to the current session; without one (or with
 * an empty one) the payload is copied unchanged.
 */
export async function stampJob<T extends object>(
  payload: T,
  tokens: TokenCodec,
  session: Session | undefined = maybeCurrentSession(),
): Promise<StampedPayload<T>> {
  const data = await session?.handOffTokenData();
  if (!session || !data || (session.clusters().length === 0 && !data.pending)) {
    return { ...payload };
  }
  return { ...payload, [JOB_TOKEN_FIELD]: tokens.encode(data) };
}

export interface JobSessionOptions {
  /** Called when the stamped token does not verify; the job then runs with an empty session. */
  onBadToken?: (error: TokenError) => void;
}

/**
 * The session a job's reads must respect. A missing token gives an empty session. A token
 * that is bad, or expired (by the time a job runs, every usable replica has applied it), gives
 * an empty session and is reported to `onBadToken`.
 */
export function sessionFromJob(
  payload: unknown,
  tokens: TokenCodec,
  options: JobSessionOptions = {},
): Session {
  const text =
    typeof payload === 'object' && payload !== null
      ? (payload as Record<string, unknown>)[JOB_TOKEN_FIELD]
      : undefined;
  if (text === undefined) return new Session();
  try {
    return Session.fromToken(tokens.decode(text));
  } catch (error) {
    options.onBadToken?.(error as TokenError);
    return new Session();
  }
}

/** Run `fn` with the job's session as the current session (before its first read). */
export function runJobInSession<T>(
  payload: unknown,
  tokens: TokenCodec,
  fn: (session: Session) => T,
  options: JobSessionOptions = {},
): T {
  const session = sessionFromJob(payload, tokens, options);
  return runWithSession(session, () => fn(session));
}
