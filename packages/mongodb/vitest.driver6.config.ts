import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { defineConfig } from 'vitest/config';

// The same tests with the previous driver major (peer range ^6 || ^7): every `mongodb` import,
// in the adapter and in the tests, resolves to mongodb 6 (installed under the alias `mongodb6`).
const require = createRequire(import.meta.url);
const driver6 = dirname(require.resolve('mongodb6/package.json'));

export default defineConfig({
  resolve: { alias: [{ find: /^mongodb(?=$|\/)/, replacement: driver6 }] },
  test: {
    name: 'driver 6',
    env: { TIDEMARK_DRIVER_MAJOR: '6' },
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    fileParallelism: false,
  },
});
