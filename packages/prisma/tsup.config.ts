import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', mariadb: 'src/mariadb-entry.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  treeshake: true,
});
