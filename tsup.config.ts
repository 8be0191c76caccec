import { build } from 'esbuild';
import { defineConfig } from 'tsup';
// @ts-expect-error a plain .mjs build script, without types
import { buildElements } from './scripts/build-elements.mjs';

/**
 * The worker thread reactor code runs in (src/sandbox/worker-file.ts finds it beside the chunk that
 * starts it): one self-contained file, not a chunk graph, so that a bundled application can copy or
 * bundle it beside itself (docs/bundling.md). Only quickjs-emscripten (WebAssembly) stays outside.
 */
async function buildSandboxWorker(): Promise<void> {
  await build({
    entryPoints: ['src/sandbox/engine/sandbox-worker.ts'],
    outfile: 'dist/sandbox-worker.js',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    external: ['quickjs-emscripten', '@jitl/*'],
    logLevel: 'warning',
  });
}

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    sqlite: 'src/sqlite.ts',
    postgres: 'src/postgres.ts',
    store: 'src/store.ts',
    operator: 'src/operator/index.ts',
    testing: 'src/testing/index.ts',
    http: 'src/http/index.ts',
    node: 'src/http/node.ts',
    metrics: 'src/observability/index.ts',
    sandbox: 'src/sandbox-entry.ts',
    cli: 'src/cli.ts',
  },
  format: ['esm'],
  target: 'node20',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: true,
  // No keepNames: it wraps every closure in a `__name` call at creation, measurable on the hot
  // paths (2.4 µs of a token creation); error classes set `name` themselves.
  // pkcs11js: an optional native dependency (the PKCS#11 key provider, docs/key-custody.md), loaded from node_modules.
  external: ['better-sqlite3', 'pg', 'quickjs-emscripten', 'vitest', 'pkcs11js'],
  // Then the browser bundles of Elements (dist/elements/, served by the HTTP layer: docs/elements.md).
  onSuccess: async () => {
    await buildSandboxWorker();
    await buildElements();
  },
});
