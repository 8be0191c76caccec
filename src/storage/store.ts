import type { ApplicationStore } from './application-store.js';
import type { AuditChainStore } from './audit-chain-store.js';
import type { OperationsStore } from './operations-store.js';
import type { ProxyStore } from './proxy-store.js';
import type { ReactorStore } from './reactor-store.js';
import type { TokenIntentStore } from './token-intent-store.js';
import type { TokenStore } from './token-store.js';
import type { WebhookStore } from './webhook-records.js';

export type * from './store-paging.js';
export type * from './store-answers.js';
export type * from './token-store.js';
export type * from './token-intent-store.js';
export type * from './application-store.js';
export type * from './reactor-store.js';
export type * from './proxy-store.js';
export type * from './operations-store.js';
export type * from './audit-chain-store.js';
export type {
  WebhookAttempt,
  WebhookAttemptOutcome,
  WebhookDeliveryFilter,
  WebhookDeliveryRecord,
  WebhookDeliveryStatus,
  WebhookRecord,
  WebhookSecretRecord,
  WebhookStore,
} from './webhook-records.js';

/** What `Store.migrate()` did: the versions it applied, in order, and the schema's version now. */
export interface MigrationOutcome {
  applied: number[];
  version: number;
}

/** How far a migration that rewrites a table has got: reported after each batch it commits. */
export interface MigrationProgress {
  version: number;
  /** The table being rewritten. */
  table: string;
  /** Rows rewritten so far (across runs: a resumed migration counts what an earlier run did). */
  done: number;
  /** Rows to rewrite in all. */
  total: number;
}

/** Options of `Store.migrate()`. */
export interface MigrateOptions {
  /** Called after each batch a long migration commits (the CLI and the vault log it, with time left). */
  onProgress?: (progress: MigrationProgress) => void;
  /** Rows a long migration rewrites per transaction (default 5000): what a stopped run may have to redo. */
  batchSize?: number;
}

/**
 * The persistence boundary. Every method is an atomic domain operation whose guarantee is stated in
 * its doc comment; implementations (SQLite, PostgreSQL) run the same conformance suite
 * (`tokenvault/testing` → `runStoreConformance`). Times are epoch milliseconds. Every token query is
 * scoped by tenant: a row of another tenant is never returned, changed or counted.
 *
 * One contract for every store:
 * - Every method answers a Promise (the SQLite store's synchronous driver stays inside it).
 * - Expected outcomes are answers, never exceptions: a lookup answers null; a write that can only
 *   find nothing answers false; a write with several outcomes answers a string union
 *   (`'created' | 'exists'`, `'deleted' | 'not_found' | 'in_use'`), or a `{ status }` union when
 *   it carries a record. A taken id is `'exists'`, not a thrown ConflictError.
 * - A rejection is a failure: ServiceUnavailableError (the database cannot answer now; retry), or
 *   a fault of the store's own state.
 */
export interface Store extends TokenStore, TokenIntentStore, ApplicationStore, ReactorStore, ProxyStore, OperationsStore, WebhookStore, AuditChainStore {
  /**
   * Optional: runs `fn` while holding a lock of that name across every instance sharing the database
   * (PostgreSQL's advisory locks). A store for one process may leave it out; the vault then just runs `fn`.
   */
  withLock?<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Applies pending migrations; idempotent. Called by createVault before first use. Answers the
   * versions it applied (none when the schema was up to date) and the schema's version after. A
   * migration that rewrites a large table does so in batches, each committed with how far it got,
   * so one stopped midway (killed, or the database gone) resumes there when migrate() runs again.
   */
  migrate(options?: MigrateOptions): Promise<MigrationOutcome>;
  close(): Promise<void>;
}
