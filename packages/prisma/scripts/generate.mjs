/**
 * `prisma generate` offline: `node generate.mjs [schema]` generates the client of `schema`
 * (default: this package's `prisma/schema.prisma`) with the `prisma` CLI installed in the package
 * the command runs in (the current directory). Prisma's CLI resolves the schema engine
 * binary before it generates and downloads it when missing; generating a client never runs it.
 * Where the binary cannot be downloaded, a stand-in that refuses to run lets generate go on
 * (prisma migrate and db push still need the real engine: the tests create tables with SQL).
 * A real engine named by PRISMA_SCHEMA_ENGINE_BINARY is used as it is.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const schema = resolve(
  process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'prisma', 'schema.prisma'),
);
const cwd = process.cwd();
const cli = createRequire(join(cwd, 'package.json')).resolve('prisma/build/index.js');

const env = { ...process.env, CHECKPOINT_DISABLE: '1', PRISMA_HIDE_UPDATE_MESSAGE: '1' };
let standIn;
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) {
  standIn = mkdtempSync(join(tmpdir(), 'tidemark-prisma-'));
  const path = join(standIn, 'schema-engine');
  writeFileSync(
    path,
    '#!/bin/sh\necho "schema engine stand-in (scripts/generate.mjs): not a real schema engine" >&2\nexit 1\n',
  );
  chmodSync(path, 0o755);
  env.PRISMA_SCHEMA_ENGINE_BINARY = path;
}
try {
  const result = spawnSync(process.execPath, [cli, 'generate', '--schema', schema], {
    cwd,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  process.exitCode = result.status ?? 1;
} finally {
  if (standIn) rmSync(standIn, { recursive: true, force: true });
}
