/** Which statements the adapter sends through `router.read` (no database needed). */
import { ConfigError, ReplicasBehindError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { PrismaTidemark, readReplicas } from '../../src/index.js';
import { isRoutedRead, noteRouterError, withCall, withRoute } from '../../src/route.js';

const SELECT = 'SELECT "public"."orders"."id" FROM "public"."orders" WHERE "customer" = $1';

describe('isRoutedRead', () => {
  it('auto: selects from queryRaw only, without writes, locks or sequence calls', async () => {
    const read = (sql: string) => withCall('query', async () => isRoutedRead(sql, 'postgres'));
    expect(await read(SELECT)).toBe(true);
    expect(await read(`  /* c */ -- c\n WITH x AS (SELECT 1) SELECT * FROM x`)).toBe(true);
    expect(await read(`(SELECT 1)`)).toBe(true);
    expect(await read(`${SELECT} FOR UPDATE`)).toBe(false);
    expect(await read(`INSERT INTO "orders" ("customer") VALUES ($1) RETURNING "id"`)).toBe(false);
    expect(await read(`WITH x AS (DELETE FROM orders RETURNING id) SELECT * FROM x`)).toBe(false);
    expect(await read(`SELECT nextval('orders_id_seq')`)).toBe(false);
    expect(await read(`SET search_path TO x`)).toBe(false);
    expect(await withCall('execute', async () => isRoutedRead(SELECT, 'postgres'))).toBe(false);
    expect(isRoutedRead(SELECT, 'postgres')).toBe(false); // no adapter call known: executeScript
  });

  it('the route of the operation wins: primary never reads, replica always does', async () => {
    expect(
      await withRoute('primary', () =>
        withCall('query', async () => isRoutedRead(SELECT, 'postgres')),
      ),
    ).toBe(false);
    expect(
      await withRoute('replica', () =>
        withCall('execute', async () => isRoutedRead('DELETE FROM x', 'postgres')),
      ),
    ).toBe(true);
  });
});

describe('misuse', () => {
  it('PrismaTidemark needs a router; readReplicas needs the router an adapter was built over', () => {
    expect(() => PrismaTidemark(undefined as never)).toThrow(ConfigError);
    expect(() => PrismaTidemark({} as never)).toThrow(ConfigError);
    const router = { cluster: 'main', read: async () => 1, write: async () => 1 } as never;
    expect(() => readReplicas({ router })).toThrow(ConfigError);
    PrismaTidemark(router);
    expect(() => readReplicas({ router })).not.toThrow();
  });
});

describe('withRoute: the router error reaches the caller', () => {
  // What Prisma throws for an adapter error: its own class, with the code and message copied.
  const wrapped = (code: string) => Object.assign(new Error('Invalid invocation'), { code });

  it('rethrows the router error of the operation when Prisma wrapped it', async () => {
    const behind = new ReplicasBehindError('main', undefined, 12);
    const failing = withRoute('auto', async () => {
      noteRouterError(behind);
      throw wrapped(behind.code);
    });
    await expect(failing).rejects.toBe(behind);
  });

  it("keeps Prisma's error when it is about something else", async () => {
    const other = wrapped('P2002');
    const failing = withRoute('auto', async () => {
      noteRouterError(new ReplicasBehindError('main', undefined, 12));
      throw other;
    });
    await expect(failing).rejects.toBe(other);
    // Outside an operation nothing is kept.
    expect(() => noteRouterError(new ReplicasBehindError('main', undefined, 1))).not.toThrow();
  });
});
