import { defineConfig } from 'tsup';

export default defineConfig({
  // `@tidemark/core/adapter` is a second entry; both share chunks in ESM and CJS (splitting), so
  // an error class thrown by the kit is the very class applications import from the main entry.
  entry: { index: 'src/index.ts', adapter: 'src/adapter-kit/index.ts' },
  format: ['esm', 'cjs'],
  splitting: true,
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  treeshake: true,
});
