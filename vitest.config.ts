import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/bench/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Test files spend much of their time waiting on PostgreSQL, fsync and sandbox worker threads, so
    // one file more than there are cores keeps the cores busy. Vitest's default (cores - 1) ran one
    // file at a time on a 2-core machine: 860 s there, 203 s with three (docs/testing.md).
    maxWorkers: availableParallelism() + 1,
    globalSetup: ['test/support/global-setup.ts'],
  },
});
