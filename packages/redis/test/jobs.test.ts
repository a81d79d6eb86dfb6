import { currentSession, Session, TokenCodec } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { JOB_TOKEN_FIELD, runJobInSession, sessionFromJob, stampJob } from '../src/index.js';
import { counterCodec } from './support/counter-codec.js';

const codec = new TokenCodec({ keys: [{ id: 'k', secret: 's'.repeat(32) }] });

describe('job token helpers', () => {
  it('stamps the session token and restores it in the worker', async () => {
    const session = new Session();
    session.raise('main', counterCodec, 17);
    const payload = await stampJob({ orderId: 3 }, codec, session);
    expect(payload.orderId).toBe(3);
    expect(typeof payload[JOB_TOKEN_FIELD]).toBe('string');
    // Through JSON, as a queue stores it.
    const restored = sessionFromJob(JSON.parse(JSON.stringify(payload)), codec);
    expect(restored.positionText('main')).toBe('17');
    runJobInSession(payload, codec, (jobSession) => {
      expect(currentSession()).toBe(jobSession);
      expect(jobSession.positionText('main')).toBe('17');
    });
  });

  it('leaves payloads without a session unstamped', async () => {
    expect(await stampJob({ a: 1 }, codec, undefined)).toEqual({ a: 1 });
    expect(await stampJob({ a: 1 }, codec, new Session())).toEqual({ a: 1 });
  });

  it('gives an empty session for a missing, altered or foreign token, reporting bad ones', async () => {
    const session = new Session();
    session.raise('main', counterCodec, 17);
    const payload = await stampJob({}, codec, session);
    const altered = { [JOB_TOKEN_FIELD]: `${payload[JOB_TOKEN_FIELD]}x` };
    const reasons: string[] = [];
    const onBadToken = (error: { code: string }) => reasons.push(error.code);
    expect(sessionFromJob({}, codec, { onBadToken }).clusters()).toEqual([]);
    expect(sessionFromJob(null, codec, { onBadToken }).clusters()).toEqual([]);
    expect(sessionFromJob(altered, codec, { onBadToken }).clusters()).toEqual([]);
    expect(sessionFromJob({ [JOB_TOKEN_FIELD]: 42 }, codec, { onBadToken }).clusters()).toEqual([]);
    expect(reasons).toEqual(['TIDEMARK_TOKEN_SIGNATURE', 'TIDEMARK_TOKEN_MALFORMED']);
  });
});
