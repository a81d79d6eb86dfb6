import { defineConfig } from 'vitest/config';

// Real clusters on a 2-core machine: one file at a time, one test at a time, long timeouts.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    fileParallelism: false,
    maxWorkers: 1,
    sequence: { concurrent: false },
    testTimeout: 300_000,
    hookTimeout: 300_000,
    teardownTimeout: 60_000,
  },
});
