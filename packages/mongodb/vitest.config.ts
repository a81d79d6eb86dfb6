import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    env: { TIDEMARK_DRIVER_MAJOR: '7' },
    // Two cores are shared: one test file at a time.
    fileParallelism: false,
  },
});
