// Replaced at build time (tsup.config.ts, vitest.config.ts) with the package.json version, so the
// instrumentation scope reports the version that is installed without bundling package.json.
declare const __TIDEMARK_OTEL_VERSION__: string;

/** Version of this package, reported as the instrumentation scope version. */
export const VERSION: string = __TIDEMARK_OTEL_VERSION__;
