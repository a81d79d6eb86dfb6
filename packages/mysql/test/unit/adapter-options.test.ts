import { ConfigError, PRIMARY } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { createMysqlAdapter, type MysqlAdapterOptions } from '../../src/index.js';

const url = 'mysql://root@127.0.0.1:1/test';

describe('createMysqlAdapter options', () => {
  it.each([
    ['no flavour', { primary: url, replicas: {} }],
    ['an unknown flavour', { flavour: 'postgres', primary: url, replicas: {} }],
    ['a replica named primary', { flavour: 'mysql', primary: url, replicas: { primary: url } }],
    ['an empty replica id', { flavour: 'mysql', primary: url, replicas: { '': url } }],
    ['a replica without a URL', { flavour: 'mysql', primary: url, replicas: { r1: 42 } }],
    [
      'a primary URL of another database',
      { flavour: 'mysql', primary: 'postgres://x@h/db', replicas: {} },
    ],
    [
      'a primary that is not a URL',
      { flavour: 'mariadb', primary: 'localhost:3306', replicas: {} },
    ],
    ['no primary', { flavour: 'mysql', replicas: {} }],
    ['no replicas object', { flavour: 'mysql', primary: url }],
    ['poolSize 0', { flavour: 'mysql', primary: url, replicas: {}, poolSize: 0 }],
    ['poolSize 1.5', { flavour: 'mariadb', primary: url, replicas: {}, poolSize: 1.5 }],
  ])('rejects %s', (_name, options) => {
    expect(() => createMysqlAdapter(options as unknown as MysqlAdapterOptions)).toThrow(
      ConfigError,
    );
  });

  it.each(['mysql', 'mariadb'] as const)(
    '%s: lists replicas in configuration order, connects lazily, waits server-side',
    async (flavour) => {
      const adapter = createMysqlAdapter({
        flavour,
        primary: url,
        replicas: { b: url, a: { host: '127.0.0.1', port: 1 } },
      });
      expect(adapter.flavour).toBe(flavour);
      expect(adapter.replicas).toEqual(['b', 'a']);
      expect(adapter.codec.kind).toBe(flavour);
      expect(adapter.waitFor).toBeTypeOf('function');
      expect(adapter.classifyAgainstPrimary).toBeTypeOf('function');
      expect(adapter.roundTrips()).toEqual({
        writes: 0,
        roundTrips: 0,
        captureFallbacks: 0,
        reads: 0,
        readRoundTrips: 0,
        sessionSetups: 0,
        setupRoundTrips: 0,
      });
      await expect(adapter.read('nope', async () => 1, {})).rejects.toThrow(ConfigError);
      await expect(adapter.read(PRIMARY, async () => 1, {})).rejects.toSatisfy((error) =>
        adapter.isRetryable!(error),
      );
      await adapter.close();
    },
  );

  it('decides nothing about history before it has probed the primary', async () => {
    const adapter = createMysqlAdapter({ flavour: 'mysql', primary: url, replicas: {} });
    const empty = adapter.codec.decode('0');
    const some = adapter.codec.decode('PhH6R3HKEeGeM8gKqUKVYg1-9ix');
    // Without the primary's UUID a missing transaction cannot be judged: the check fails, which
    // the router and the monitor treat as "unverified" (fail closed), never as "ok".
    expect(() => adapter.classifyAgainstPrimary(empty, some)).toThrow(/not been probed/);
    await adapter.close();
  });
});
