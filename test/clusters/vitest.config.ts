import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    // Starting pg19 the first time on a machine builds its chroot (debootstrap + apt): minutes.
    hookTimeout: 25 * 60_000,
    // Clusters are several server processes each; on a 2-core machine one file at a time.
    fileParallelism: false,
  },
});
