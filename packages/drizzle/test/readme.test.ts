/**
 * The README's before/after snippets, run as they stand on a real PostgreSQL 15 cluster (a
 * primary and two replicas) with replay paused on both replicas: Drizzle's own withReplicas
 * misses the user who just signed up, Tidemark's finds them. Also checks that the two snippets
 * differ only in imports, setup and comments, as the README says.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type Cluster, startCluster } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForTable } from './integration/targets.js';

const README = new URL('../README.md', import.meta.url);
const SNIPPETS = new URL('./.snippets/', import.meta.url);

function snippet(name: string): string {
  const text = readFileSync(README, 'utf8');
  const match = new RegExp(`<!-- snippet: ${name} -->\\n\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(text);
  if (!match?.[1]) throw new Error(`README.md has no snippet '${name}'`);
  return match[1];
}

/** The lines a user keeps: not imports, not comments, not the setup (router and withReplicas). */
function keptLines(code: string): string[] {
  // Top-level statements start at column 0 (a closing bracket there ends the one before).
  const statements = code.split(/\n(?=[^\s)\]}])/);
  return statements
    .filter((s) => !s.startsWith('import ') && !s.startsWith('//'))
    .filter((s) => !/withReplicas\(|new Router\(|router\.ready\(/.test(s))
    .map((s) =>
      s
        .split('\n')
        .filter((line) => !line.trim().startsWith('//'))
        .join('\n')
        .trim(),
    )
    .filter((s) => s !== '');
}

/** Write the snippet as a module that also exports what the test looks at, and import it. */
async function run(name: string, exported: string[]): Promise<Record<string, unknown>> {
  mkdirSync(SNIPPETS, { recursive: true });
  const file = new URL(`./${name}.ts`, SNIPPETS);
  writeFileSync(file, `${snippet(name)}\nexport { ${exported.join(', ')} };\n`);
  return (await import(/* @vite-ignore */ file.href)) as Record<string, unknown>;
}

const runs = (process.env['TIDEMARK_TARGETS'] ?? 'pg15').split(',').includes('pg15');

describe.skipIf(!runs)('README snippets on pg15', () => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startCluster('pg15', { replicas: 2 });
    await cluster.exec(
      cluster.primary().name,
      `create table users (id serial primary key, name text not null, verified boolean not null default false, jsonb jsonb, created_at timestamptz not null default now())`,
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
    const before = keptLines(snippet('before'));
    expect(before.length).toBeGreaterThan(8);
    expect(keptLines(snippet('after'))).toEqual(before);
  });

  it('with replay paused, Drizzle misses the new user and Tidemark finds them', async () => {
    const names = cluster.replicas().map((n) => n.name);
    for (const n of names) await cluster.pauseReplay(n);
    type Pool = { end(): Promise<void> };
    type Db = { $client: Pool };
    try {
      const before = await run('before', ['profile', 'primaryDb', 'read1', 'read2']);
      for (const db of ['primaryDb', 'read1', 'read2']) await (before[db] as Db).$client.end();
      const after = await run('after', ['profile', 'primaryDb', 'read1', 'read2', 'router']);
      for (const db of ['primaryDb', 'read1', 'read2']) await (after[db] as Db).$client.end();
      await (after['router'] as { close(): Promise<void> }).close();
      console.log(
        `[pg15] README snippets, replay paused: Drizzle profile rows ${(before['profile'] as unknown[]).length}, Tidemark profile rows ${(after['profile'] as unknown[]).length}`,
      );
      expect(before['profile']).toEqual([]);
      expect(after['profile']).toEqual([expect.objectContaining({ name: 'Dan' })]);
    } finally {
      for (const n of names) await cluster.resumeReplay(n);
    }
  });
});
