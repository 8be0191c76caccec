import { RECORD_UPDATE_SQL } from '../sql/record-update.js';
import type { Sql } from '../sql/sql.js';
import { APPLICATIONS_AREA, APPLICATIONS_SQL } from './applications.js';
import { AUDIT_PER_STORE, AUDIT_SHARED, AUDIT_SQL } from './audit.js';
import { CREDENTIALS, CREDENTIALS_SQL } from './credentials.js';
import { IDEMPOTENCY, IDEMPOTENCY_SQL } from './idempotency.js';
import { JOBS_AREA, JOBS_SQL } from './jobs.js';
import { PROXIES_AREA, PROXIES_SQL } from './proxies.js';
import { REACTOR_REQUESTS, REACTOR_REQUESTS_SQL, REACTOR_REQUESTS_WRITING_WITH_SQL } from './reactor-requests.js';
import { TENANTS_AREA, TENANTS_SQL } from './tenants.js';
import { TOKEN_INTENTS, TOKEN_INTENTS_SQL } from './token-intents.js';
import { TOKENS_PER_STORE, TOKENS_SHARED, TOKENS_SQL } from './tokens.js';
import { REACTORS_AREA, REACTORS_SQL } from './reactors.js';
import { WEBHOOKS_AREA, WEBHOOKS_LOCKING_SQL, WEBHOOKS_SQL } from './webhooks.js';

/**
 * The areas written once for every dialect (sql/): their operations, and every fixed statement
 * they run, which test/storage/store-statements.test.ts renders and compiles on each store (those
 * under `writingWith` only where the dialect has a data-modifying WITH). An area ported onto the
 * shared layer adds its line here; `perStore` names the methods of a partly shared area that each
 * store still writes itself.
 */
export const SHARED_AREAS = {
  idempotency: { operations: IDEMPOTENCY, statements: IDEMPOTENCY_SQL },
  jobs: { operations: JOBS_AREA, statements: JOBS_SQL },
  reactorRequests: { operations: REACTOR_REQUESTS, statements: REACTOR_REQUESTS_SQL, writingWith: REACTOR_REQUESTS_WRITING_WITH_SQL },
  tenants: { operations: TENANTS_AREA, statements: TENANTS_SQL },
  applications: { operations: APPLICATIONS_AREA, statements: { ...APPLICATIONS_SQL, ...RECORD_UPDATE_SQL } },
  credentials: { operations: CREDENTIALS, statements: CREDENTIALS_SQL },
  tokenIntents: { operations: TOKEN_INTENTS, statements: TOKEN_INTENTS_SQL },
  reactors: { operations: REACTORS_AREA, statements: { ...REACTORS_SQL, ...RECORD_UPDATE_SQL } },
  proxies: { operations: PROXIES_AREA, statements: PROXIES_SQL },
  // The locking statements are PostgreSQL's; store-statements.test.ts compiles writingWith there only.
  webhooks: { operations: WEBHOOKS_AREA, statements: WEBHOOKS_SQL, writingWith: WEBHOOKS_LOCKING_SQL },
  audit: { operations: AUDIT_SHARED, statements: AUDIT_SQL, perStore: AUDIT_PER_STORE },
  tokens: { operations: TOKENS_SHARED, statements: TOKENS_SQL, perStore: TOKENS_PER_STORE },
} as const satisfies Record<string, { operations: object; statements: Record<string, Sql>; writingWith?: Record<string, Sql>; perStore?: readonly string[] }>;
