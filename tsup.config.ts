import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    sqlite: 'src/sqlite.ts',
    postgres: 'src/postgres.ts',
    store: 'src/store.ts',
    testing: 'src/testing/index.ts',
    http: 'src/http/index.ts',
    node: 'src/http/node.ts',
    metrics: 'src/observability/index.ts',
    sandbox: 'src/sandbox-entry.ts',
    cli: 'src/cli.ts',
    // Not an export: the worker thread reactor code runs in (src/sandbox/quickjs-sandbox.ts finds it
    // beside the chunk that starts it).
    'sandbox-worker': 'src/sandbox/engine/sandbox-worker.ts',
  },
  format: ['esm'],
  target: 'node20',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: true,
  // No keepNames: it wraps every closure in a `__name` call at creation, measurable on the hot
  // paths (2.4 µs of a token creation); error classes set `name` themselves.
  external: ['better-sqlite3', 'pg', 'quickjs-emscripten', 'vitest'],
});
