import type { Sql } from '../sql/sql.js';
import { IDEMPOTENCY, IDEMPOTENCY_SQL } from './idempotency.js';

/**
 * The areas written once for every dialect (sql/): their operations, and every fixed statement
 * they run, which test/storage/store-statements.test.ts renders and compiles on each store. An area
 * ported onto the shared layer adds its two lines here.
 */
export const SHARED_AREAS = {
  idempotency: { operations: IDEMPOTENCY, statements: IDEMPOTENCY_SQL },
} as const satisfies Record<string, { operations: object; statements: Record<string, Sql> }>;
