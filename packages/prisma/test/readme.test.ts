/**
 * The README's before/after snippets, run as they stand (the import of the generated client
 * pointed at the tests' one) on real clusters (a primary and two replicas: PostgreSQL 15 for the
 * first pair, MySQL 9.7 for the MySQL pair) with replay paused on both replicas:
 * `@prisma/extension-read-replicas` misses the customer's new order, Tidemark finds it. Also
 * checks that the two snippets of a pair differ only in imports, setup and comments, as the
 * README says.
 */
import { rmSync } from 'node:fs';
import {
  type Cluster,
  keptLines,
  readmeSnippet,
  runSnippet,
  startCluster,
  waitForTable,
} from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const README = new URL('../README.md', import.meta.url);
const SNIPPETS = new URL('./.snippets/', import.meta.url);

/** What the switch replaces: the adapters, the clients, the router. */
const SETUP = /new Prisma(Pg|MariaDb)\(|new PrismaClient\(|new Router\(|router\.ready\(/;

type Disconnect = { $disconnect(): Promise<void> };

const requested = (process.env['TIDEMARK_TARGETS'] ?? 'pg15,mysql97').split(',');

/** Each README pair: the cluster it runs on, its snippet names, the tests' generated client. */
const pairs = [
  { target: 'pg15', before: 'before', after: 'after', client: '../generated/client.js' },
  {
    target: 'mysql97',
    before: 'mysql-before',
    after: 'mysql-after',
    client: '../generated-mysql/client.js',
  },
].filter((pair) => requested.includes(pair.target));
if (pairs.length === 0) {
  console.warn(
    `\n*** @tidemark/prisma README snippets SKIPPED: TIDEMARK_TARGETS=${JSON.stringify(process.env['TIDEMARK_TARGETS'])} names neither pg15 nor mysql97. ***\n`,
  );
}

describe.skipIf(pairs.length === 0).each(pairs)('README snippets on $target', (pair) => {
  let cluster: Cluster;
  const snippet = (name: string) =>
    readmeSnippet(README, name).replace("'./generated/prisma/client.js'", `'${pair.client}'`);

  beforeAll(async () => {
    cluster = await startCluster(pair.target, { replicas: 2 });
    await cluster.exec(
      cluster.primary().name,
      'create table orders (id serial primary key, customer int not null, note varchar(100) not null)',
    );
    await waitForTable(cluster, 'orders');
    process.env['DATABASE_URL'] = cluster.primary().url;
    process.env['REPLICA_URL'] = cluster.replicas()[0]?.url;
  }, 240_000);

  afterAll(async () => {
    rmSync(SNIPPETS, { recursive: true, force: true });
    await cluster?.teardown();
  });

  it('the after snippet changes only imports and setup', () => {
    const before = keptLines(snippet(pair.before), SETUP);
    expect(before).toHaveLength(3);
    expect(keptLines(snippet(pair.after), SETUP)).toEqual(before);
  });

  it('with replay paused, extension-read-replicas misses the new order and Tidemark finds it', async () => {
    const names = cluster.replicas().map((n) => n.name);
    for (const n of names) await cluster.pauseReplay(n);
    try {
      const before = await runSnippet(SNIPPETS, pair.before, snippet(pair.before), [
        'orders',
        'fromPrimary',
        'prisma',
        'replicaClient',
      ]);
      await (before['prisma'] as Disconnect).$disconnect();
      await (before['replicaClient'] as Disconnect).$disconnect();
      const after = await runSnippet(SNIPPETS, pair.after, snippet(pair.after), [
        'placed',
        'orders',
        'fromPrimary',
        'prisma',
        'router',
      ]);
      await (after['prisma'] as Disconnect).$disconnect();
      await (after['router'] as { close(): Promise<void> }).close();
      console.log(
        `[${pair.target}] README snippets, replay paused: extension-read-replicas orders ${(before['orders'] as unknown[]).length}, Tidemark orders ${(after['orders'] as unknown[]).length}`,
      );
      expect(before['orders']).toEqual([]);
      expect(before['fromPrimary']).toMatchObject({ customer: 7, note: 'book' });
      // Both orders of customer 7 (the before snippet's too), the new one included.
      const placed = after['placed'] as { id: number };
      expect((after['orders'] as Array<{ id: number }>).map((o) => o.id)).toContain(placed.id);
      expect(after['fromPrimary']).toMatchObject({ customer: 7, note: 'book' });
    } finally {
      for (const n of names) await cluster.resumeReplay(n);
    }
  });
});
