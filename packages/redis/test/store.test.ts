import type { ReplicaState } from '@tidemark/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisErrorCode, RedisTokenStore } from '../src/index.js';
import { counterCodec } from './support/counter-codec.js';
import { startRedis, type TestRedis } from './support/redis-server.js';

let redis: TestRedis;
let clients: Redis[];

beforeAll(async () => {
  redis = await startRedis();
  // Several connections, as several app instances would have.
  clients = [redis.client(), redis.client(), redis.client(), redis.client()];
});
afterAll(async () => {
  await redis?.stop();
});

function storeOn(
  client: Redis,
  extra: Partial<ConstructorParameters<typeof RedisTokenStore>[0]> = {},
) {
  return new RedisTokenStore({
    redis: client,
    codecs: { main: counterCodec, other: counterCodec },
    ttlSeconds: 30,
    keyPrefix: 'test:',
    ...extra,
  });
}

function replica(id: string, applied: number | undefined): ReplicaState<unknown> {
  return {
    id,
    reachable: applied !== undefined,
    applied,
    lagSeconds: 0,
    lagBytes: undefined,
    paused: false,
    history: 'current',
    behindPrimarySince: undefined,
    sampledAt: 0,
    failures: 0,
    lastError: undefined,
  };
}

describe('RedisTokenStore', () => {
  it('merges per cluster and never lowers a stored position', async () => {
    const store = storeOn(clients[0] as Redis);
    expect(await store.get('merge')).toBeUndefined();
    await store.raise('merge', { main: '10' });
    await store.raise('merge', { main: '7', other: '3' });
    expect((await store.get('merge'))?.positions).toEqual({ main: '10', other: '3' });
    await store.raise('merge', { main: '12' });
    expect((await store.get('merge'))?.positions).toEqual({ main: '12', other: '3' });
  });

  it('sets a TTL on every raise', async () => {
    const store = storeOn(clients[0] as Redis, { ttlSeconds: 17 });
    await store.raise('ttl', { main: '1' });
    const ttl = await (clients[0] as Redis).ttl('test:ttl');
    expect(ttl).toBeGreaterThan(10);
    expect(ttl).toBeLessThanOrEqual(17);
  });

  it('drops positions of clusters it has no codec for', async () => {
    const store = storeOn(clients[0] as Redis);
    await store.raise('unknown', { main: '5', mystery: '9' });
    expect((await store.get('unknown'))?.positions).toEqual({ main: '5' });
  });

  it('loses no update under concurrent raises from many connections (atomic merge)', async () => {
    const stores = clients.map((client) => storeOn(client));
    // 4 connections x 50 raises, interleaved, each with a distinct counter; the final value
    // must be the maximum, and every cluster raised by any writer must be present.
    const values = Array.from({ length: 200 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    await Promise.all(
      values.map((value, index) => {
        const store = stores[index % stores.length] as RedisTokenStore;
        const positions: Record<string, string> =
          value % 2 === 0 ? { main: String(value) } : { main: String(value), other: String(value) };
        return store.raise('race', positions);
      }),
    );
    const final = await stores[0]?.get('race');
    expect(final?.positions).toEqual({ main: '200', other: '199' });
    const conflicts = stores.reduce((sum, store) => sum + store.conflictCount, 0);
    console.log(
      `concurrent raises: 200 raises over 4 connections, ${conflicts} CAS conflicts retried`,
    );
    // The test is only meaningful if raises really raced.
    expect(conflicts).toBeGreaterThan(0);
  });

  it('CONTROL: a naive read-merge-write without compare-and-set loses updates', async () => {
    const client = clients[0] as Redis;
    // Same merge, plain GET then SET: the lost-update anomaly the CAS loop prevents.
    const naiveRaise = async (value: number) => {
      const before = await client.get('test:naive');
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
      const current = before === null ? 0 : Number(before);
      await client.set('test:naive', String(Math.max(current, value)));
    };
    const values = Array.from({ length: 200 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    let lost = 0;
    for (let round = 0; round < 5 && lost === 0; round++) {
      await client.del('test:naive');
      await Promise.all(values.map((value) => naiveRaise(value)));
      if (Number(await client.get('test:naive')) !== 200) lost++;
    }
    expect(lost).toBeGreaterThan(0);
  });

  it('gives up with a retryable typed error after maxAttempts conflicts', async () => {
    const client = clients[0] as Redis;
    // A Redis whose compare-and-set always loses, as under endless contention.
    const losing = { get: (key: string) => client.get(key), eval: async () => 0 };
    const store = new RedisTokenStore({
      redis: losing,
      codecs: { main: counterCodec },
      ttlSeconds: 5,
      maxAttempts: 3,
    });
    await expect(store.raise('never', { main: '1' })).rejects.toMatchObject({
      code: RedisErrorCode.Contention,
      retryable: true,
    });
  });

  describe('dropIfApplied', () => {
    it('keeps the entry while any replica has not applied it, drops it once all have', async () => {
      const store = storeOn(clients[0] as Redis);
      await store.raise('drop', { main: '50' });
      let states = [replica('r1', 60), replica('r2', 40)];
      const router = { cluster: 'main', monitor: { states: () => states } };
      expect(await store.dropIfApplied('drop', [router])).toBe('pending');
      states = [replica('r1', 60), replica('r2', undefined)];
      expect(await store.dropIfApplied('drop', [router])).toBe('pending');
      expect(await store.dropIfApplied('drop', [])).toBe('pending');
      states = [replica('r1', 60), replica('r2', 50)];
      expect(await store.dropIfApplied('drop', [router])).toBe('dropped');
      expect(await store.get('drop')).toBeUndefined();
      expect(await store.dropIfApplied('drop', [router])).toBe('absent');
    });

    it('keeps a raise that lands between the check and the delete (compare-and-delete)', async () => {
      const client = clients[0] as Redis;
      const otherDevice = storeOn(clients[1] as Redis);
      // Another device's raise reaches Redis after the check and before the delete.
      const racing = {
        get: (key: string) => client.get(key),
        eval: async (script: string, keys: number, ...args: Array<string | number>) => {
          if (script.includes("'DEL'")) await otherDevice.raise('cad', { main: '70' });
          return client.eval(script, keys, ...args);
        },
      };
      const store = storeOn(client, { redis: racing });
      await store.raise('cad', { main: '50' });
      const router = { cluster: 'main', monitor: { states: () => [replica('r1', 60)] } };
      expect(await store.dropIfApplied('cad', [router])).toBe('changed');
      expect((await store.get('cad'))?.positions).toEqual({ main: '70' });
    });
  });
});
