import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    sqlite: 'src/sqlite.ts',
    postgres: 'src/postgres.ts',
    testing: 'src/testing/index.ts',
    http: 'src/http/index.ts',
    node: 'src/http/node.ts',
    cli: 'src/cli.ts',
  },
  format: ['esm'],
  target: 'node20',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: true,
  // Error classes keep their names in stack traces and `constructor.name`.
  keepNames: true,
  external: ['better-sqlite3', 'pg', 'quickjs-emscripten', 'vitest'],
});
