import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // The README snippets import the package by name: run them against this source.
    alias: [
      {
        find: /^@tidemark\/prisma$/,
        replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)),
      },
      {
        find: /^@tidemark\/prisma\/mariadb$/,
        replacement: fileURLToPath(new URL('./src/mariadb-entry.ts', import.meta.url)),
      },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Integration tests start real servers (PostgreSQL, MySQL, MariaDB): one file at a time on a 2-core machine.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
