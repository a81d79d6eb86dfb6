import { AsyncLocalStorage } from 'node:async_hooks';
import { ErrorCode, TidemarkError } from './errors.js';
import type { Session } from './session.js';

/** Stable codes of the per-request context (also in {@link ErrorCode}). */
export const ContextErrorCode = {
  /** `currentSession()` was called outside `runWithSession`. */
  NoSession: ErrorCode.NoSessionContext,
} as const;

/** Thrown by {@link currentSession} outside a {@link runWithSession} scope. */
export class NoSessionContextError extends TidemarkError {
  constructor() {
    super(
      ContextErrorCode.NoSession,
      'currentSession() was called outside a Tidemark session context. Run the request inside runWithSession(session, fn) (the @tidemark/http middleware does this for you), or pass a Session explicitly; use maybeCurrentSession() where having no session is fine.',
    );
  }
}

// One store per process even when both the ESM and the CJS build are loaded (dual package):
// two stores would make a session set by one build invisible to code importing the other.
const STORE_KEY = Symbol.for('tidemark.session-context');
type GlobalWithStore = typeof globalThis & { [STORE_KEY]?: AsyncLocalStorage<Session> };
const holder = globalThis as GlobalWithStore;
const storage: AsyncLocalStorage<Session> = holder[STORE_KEY] ?? new AsyncLocalStorage<Session>();
holder[STORE_KEY] = storage;

/**
 * Run `fn` with `session` as the current session of everything it calls, synchronously or
 * asynchronously, so repositories deep in a request can use {@link currentSession} instead of
 * threading the session through every call. Scopes nest: the innermost session wins.
 */
export function runWithSession<T>(session: Session, fn: () => T): T {
  return storage.run(session, fn);
}

/** The session of the surrounding {@link runWithSession}; throws {@link NoSessionContextError} outside one. */
export function currentSession(): Session {
  const session = storage.getStore();
  if (!session) throw new NoSessionContextError();
  return session;
}

/** The session of the surrounding {@link runWithSession}, or undefined outside one. */
export function maybeCurrentSession(): Session | undefined {
  return storage.getStore();
}
