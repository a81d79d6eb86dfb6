import { describe, expect, it } from 'vitest';
import {
  ContextErrorCode,
  currentSession,
  isTidemarkError,
  maybeCurrentSession,
  NoSessionContextError,
  runWithSession,
  Session,
} from '../../src/index.js';

describe('per-request session context', () => {
  it('throws a typed error with a stable code outside a context', () => {
    expect(maybeCurrentSession()).toBeUndefined();
    let caught: unknown;
    try {
      currentSession();
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(NoSessionContextError);
    expect(isTidemarkError(caught)).toBe(true);
    expect((caught as NoSessionContextError).code).toBe(ContextErrorCode.NoSession);
    expect((caught as Error).message).toMatch(/runWithSession/);
  });

  it('follows async continuations and keeps concurrent requests apart', async () => {
    const sessions = Array.from({ length: 20 }, () => new Session());
    const seen = await Promise.all(
      sessions.map((session, index) =>
        runWithSession(session, async () => {
          // Interleave the requests so a shared variable would mix them up.
          await new Promise((resolve) => setTimeout(resolve, (index * 7) % 5));
          await Promise.resolve();
          return currentSession();
        }),
      ),
    );
    seen.forEach((session, index) => {
      expect(session).toBe(sessions[index]);
    });
    expect(maybeCurrentSession()).toBeUndefined();
  });

  it('nests: the innermost session wins and the outer one comes back', () => {
    const outer = new Session();
    const inner = new Session();
    runWithSession(outer, () => {
      expect(currentSession()).toBe(outer);
      runWithSession(inner, () => expect(currentSession()).toBe(inner));
      expect(currentSession()).toBe(outer);
    });
  });

  it('returns the callback value, including promises', async () => {
    expect(runWithSession(new Session(), () => 42)).toBe(42);
    await expect(runWithSession(new Session(), async () => 'done')).resolves.toBe('done');
  });
});
