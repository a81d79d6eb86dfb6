import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/node-postgres.ts', 'src/mysql2.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  treeshake: true,
  // One copy of the shared modules (errors, routing) for all entry points, in both formats, so
  // `instanceof TidemarkDrizzleError` holds whichever entry threw it.
  splitting: true,
});
