import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    // Two cores are shared: one test file at a time.
    fileParallelism: false,
  },
});
