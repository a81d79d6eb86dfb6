import { ConfigError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { createPgAdapter, type PgAdapterOptions } from '../../src/index.js';

const url = 'postgres://postgres@127.0.0.1:1/postgres';

describe('createPgAdapter options', () => {
  it.each([
    ['a replica named primary', { primary: url, replicas: { primary: url } }],
    ['an empty replica id', { primary: url, replicas: { '': url } }],
    ['a replica without a URL', { primary: url, replicas: { r1: 42 } }],
    ['no primary', { replicas: {} }],
    ['no replicas object', { primary: url }],
    ['poolSize 0', { primary: url, replicas: {}, poolSize: 0 }],
    ['poolSize 1.5', { primary: url, replicas: {}, poolSize: 1.5 }],
    ['an unknown wait mode', { primary: url, replicas: {}, wait: 'server' }],
    ['a negative probeBeforeWaitMs', { primary: url, replicas: {}, probeBeforeWaitMs: -1 }],
    ['probeBeforeWaitMs NaN', { primary: url, replicas: {}, probeBeforeWaitMs: Number.NaN }],
    ['preparedProbes as text', { primary: url, replicas: {}, preparedProbes: 'yes' }],
    ['pipelineCapture as a number', { primary: url, replicas: {}, pipelineCapture: 1 }],
  ])('rejects %s', (_name, options) => {
    expect(() => createPgAdapter(options as unknown as PgAdapterOptions)).toThrow(ConfigError);
  });

  it('lists replicas in configuration order, creates no connection, and answers waits unsupported before a probe', async () => {
    const adapter = createPgAdapter({
      primary: url,
      replicas: { b: url, a: { connectionString: url } },
    });
    expect(adapter.replicas).toEqual(['b', 'a']);
    expect(adapter.codec.kind).toBe('pg');
    // Waits of about one replay lag are found by probes before WAIT FOR LSN is sent.
    expect(adapter.probeBeforeWaitMs).toBe(5);
    expect(
      createPgAdapter({ primary: url, replicas: {}, probeBeforeWaitMs: 0 }).probeBeforeWaitMs,
    ).toBe(0);
    // The server version is unknown until a probe: the router polls instead of waiting.
    const signal = new AbortController().signal;
    const somewhere = { timeline: 1, lsn: 1n };
    expect(await adapter.waitFor('a', somewhere, 100, { signal })).toEqual({
      outcome: 'unsupported',
    });
    expect(adapter.roundTrips()).toEqual({ writes: 0, roundTrips: 0, reads: 0, readRoundTrips: 0 });
    await expect(adapter.read('nope', async () => 1, {})).rejects.toThrow(ConfigError);
    await adapter.close();
  });
});
