import type { TestProject } from 'vitest/node';
import { ensureBuilt } from './ensure-built.js';
import { startSchemaPool } from './pg-schema-pool-setup.js';

/**
 * Builds dist/ once before any test file runs, so files that need it never build concurrently; and
 * starts the run's pool of migrated PostgreSQL schemas (pg-schema-pool.ts), dropped at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  ensureBuilt();
  const pool = await startSchemaPool();
  project.provide('pgSchemaPool', pool.context);
  return pool.teardown;
}
