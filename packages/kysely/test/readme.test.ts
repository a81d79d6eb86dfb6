/**
 * The README's before/after snippets, run as they stand on a real PostgreSQL 15 cluster (a
 * primary and two replicas) with replay paused on both replicas: kysely-replication misses the
 * user who just signed up, Tidemark's dialect finds them. Also checks that the two snippets differ
 * only in imports, setup and comments, as the README says.
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

const snippet = (name: string) => readmeSnippet(README, name);
/** What the switch replaces: the Kysely instance's dialect and the router. */
const SETUP = /new Kysely<|new Router\(|router\.ready\(/;
const run = (name: string, exported: string[]) =>
  runSnippet(SNIPPETS, name, snippet(name), exported);

const runs = (process.env['TIDEMARK_TARGETS'] ?? 'pg15').split(',').includes('pg15');
if (!runs) {
  console.warn(
    `\n*** @tidemark/kysely README snippets SKIPPED, NOT PASSED: TIDEMARK_TARGETS=${JSON.stringify(process.env['TIDEMARK_TARGETS'])} does not name pg15. ***\n`,
  );
}

describe.skipIf(!runs)('README snippets on pg15', () => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startCluster('pg15', { replicas: 2 });
    await cluster.exec(
      cluster.primary().name,
      'create table users (id serial primary key, name text not null)',
    );
    await waitForTable(cluster, 'users');
    const [r1, r2] = cluster.replicas();
    process.env['DATABASE_URL_PRIMARY'] = cluster.primary().url;
    process.env['DATABASE_URL_REPLICA_1'] = r1?.url;
    process.env['DATABASE_URL_REPLICA_2'] = r2?.url;
  }, 240_000);

  afterAll(async () => {
    rmSync(SNIPPETS, { recursive: true, force: true });
    await cluster?.teardown();
  });

  it('the after snippet changes only imports and setup', () => {
    const before = keptLines(snippet('before'), SETUP);
    expect(before.length).toBeGreaterThanOrEqual(3);
    expect(keptLines(snippet('after'), SETUP)).toEqual(before);
  });

  it('with replay paused, kysely-replication misses the new user and Tidemark finds them', async () => {
    const names = cluster.replicas().map((n) => n.name);
    for (const n of names) await cluster.pauseReplay(n);
    type Db = { destroy(): Promise<void> };
    try {
      const before = await run('before', ['profile', 'db']);
      await (before['db'] as Db).destroy();
      const after = await run('after', ['profile', 'db', 'router']);
      await (after['db'] as Db).destroy();
      await (after['router'] as { close(): Promise<void> }).close();
      console.log(
        `[pg15] README snippets, replay paused: kysely-replication profile rows ${(before['profile'] as unknown[]).length}, Tidemark profile rows ${(after['profile'] as unknown[]).length}`,
      );
      expect(before['profile']).toEqual([]);
      expect(after['profile']).toEqual([expect.objectContaining({ name: 'Dan' })]);
    } finally {
      for (const n of names) await cluster.resumeReplay(n);
    }
  });
});
