import { defineConfig } from 'tsup';

// The bench runs from a bundle: core's sources and the simulator included, no `keepNames`
// helpers (tsx wraps every closure in one; the bundle runs the simulation about a third faster).
export default defineConfig({
  entry: ['src/cli.ts'],
  format: ['esm'],
  platform: 'node',
  target: 'node20',
  outDir: 'dist',
  clean: true,
  splitting: false,
  sourcemap: false,
  dts: false,
  silent: true,
});
