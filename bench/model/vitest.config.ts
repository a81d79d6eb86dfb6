import { defineConfig } from 'vitest/config';

// Virtual time only: nothing here waits on real clocks, so no test asserts wall-clock time.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
  },
});
