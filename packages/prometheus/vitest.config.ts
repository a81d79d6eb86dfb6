import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // Each integration file starts its own PostgreSQL cluster; on 2 cores, one at a time.
    fileParallelism: false,
  },
});
