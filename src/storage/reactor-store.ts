import type { SessionGrants } from './application-store.js';
import type { JobRecord } from './operations-store.js';
import type { Inserted, RecordUpdateResult } from './store-answers.js';
import type { PageRequest, PageResult } from './store-paging.js';

export type DeclaredType = 'string' | 'number' | 'boolean' | 'object' | 'array';

export interface FormulaRecord {
  id: string;
  tenantId: string;
  name: string;
  description: string | null;
  code: string;
  configuration: { name: string; description: string | null; type: 'string' | 'number' | 'boolean' }[];
  requestParameters: { name: string; description: string | null; type: DeclaredType; optional: boolean }[];
  createdBy: string | null;
  createdAt: number;
  modifiedBy: string | null;
  modifiedAt: number | null;
}

/** A reactor runs exactly one of: its formula's code (`formulaId`) or its own inline `code`; the other is null. */
export interface ReactorRecord {
  id: string;
  tenantId: string;
  name: string;
  formulaId: string | null;
  /** Inline code (the reactor was created with `code` instead of a formula). */
  code: string | null;
  configuration: Record<string, unknown>;
  applicationId: string | null;
  /**
   * The application's grants when a caller other than a tenant administrator bound the reactor to
   * it (null: unbound, or bound by an administrator). The reactor then acts with no more than both
   * these and the application's current grants, so a later widening of the application by an
   * administrator does not reach whoever bound it (docs/authority.md).
   */
  boundGrants: SessionGrants | null;
  createdBy: string | null;
  createdAt: number;
  modifiedBy: string | null;
  modifiedAt: number | null;
}

export interface ReactorFilter {
  ids?: string[];
  /** Case-insensitive substring; `*` matches any run of characters. */
  name?: string;
}

/** What an update of a formula changes (only the fields given), plus the modification stamp. */
export interface FormulaChanges {
  name?: string;
  description?: string | null;
  code?: string;
  configuration?: FormulaRecord['configuration'];
  requestParameters?: FormulaRecord['requestParameters'];
  modifiedBy: string | null;
  modifiedAt: number;
}

/** What an update of a reactor changes (only the fields given), plus the modification stamp. */
export interface ReactorChanges {
  name?: string;
  /** Inline code (only for a reactor created with code; its formula never changes). */
  code?: string;
  configuration?: Record<string, unknown>;
  applicationId?: string | null;
  boundGrants?: SessionGrants | null;
  modifiedBy: string | null;
  modifiedAt: number;
}

/**
 * An asynchronous reactor invocation (docs/reactors.md). The args as the
 * caller gave them (token references unresolved, but possibly raw data) and the run's result are
 * sealed with the tenant's data key (KeyRing.sealRecord); the error is a problem object, which
 * carries no data.
 */
export interface ReactorRequestRecord {
  tenantId: string;
  id: string;
  reactorId: string;
  /** The application that asked for the run: the run acts with its grants, and only it reads the result. */
  applicationId: string;
  status: 'pending' | 'running' | 'completed' | 'failed';
  callbackUrl: string | null;
  timeoutMs: number;
  args: Uint8Array;
  result: Uint8Array | null;
  /** JSON text of the problem object of a failed run. */
  error: string | null;
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
  /** When the finished request is removed (completedAt + 24 h); null until it finishes. */
  expiresAt: number | null;
}

/** How an asynchronous run ended (Store.finishReactorRequest). */
export interface ReactorRequestOutcome {
  status: 'completed' | 'failed';
  result: Uint8Array | null;
  error: string | null;
  completedAt: number;
  expiresAt: number;
}

/** What a formula update is decided on (Store.updateFormula). */
export interface FormulaExpectation extends Pick<FormulaRecord, 'code' | 'configuration' | 'requestParameters'> {
  /** The sorted distinct application ids the formula's reactors are bound to. */
  boundApplications?: readonly string[];
}

/** A reactor and its formula (Store.getReactorAndFormula). */
export interface ReactorAndFormula {
  reactor: ReactorRecord;
  /** Null when the reactor runs inline code, and when its formula is missing (a broken store). */
  formula: FormulaRecord | null;
}

/** Reactor formulas, reactors and asynchronous reactor requests (see Store for the contract every method keeps). */
export interface ReactorStore {
  // --- reactor formulas and reactors ---------------------------------------------------------
  /** Inserts; 'exists' (nothing written) when the id is taken. */
  createFormula(formula: FormulaRecord): Promise<Inserted>;
  getFormula(tenantId: string, id: string): Promise<FormulaRecord | null>;
  listFormulas(tenantId: string, page: PageRequest): Promise<PageResult<FormulaRecord>>;
  /**
   * Atomically writes `changes` (only the fields given). With `expected`: only while the formula's
   * code and declarations are still those, and (when `boundApplications` is given) while the
   * distinct non-null application ids of the tenant's reactors of this formula are exactly those
   * (what runs and as whom, which the caller's authorization was decided on); else `changed` and
   * nothing written. A reactor created or rebound concurrently is either seen or waits for the write.
   */
  updateFormula(tenantId: string, id: string, changes: FormulaChanges, expected?: FormulaExpectation): Promise<RecordUpdateResult<FormulaRecord>>;
  /** Atomically: 'in_use' (nothing deleted) when a reactor of the tenant references it; 'not_found'; else 'deleted'. */
  deleteFormula(tenantId: string, id: string): Promise<'deleted' | 'not_found' | 'in_use'>;
  /** Inserts; 'exists' (nothing written) when the id is taken. */
  createReactor(reactor: ReactorRecord): Promise<Inserted>;
  getReactor(tenantId: string, id: string): Promise<ReactorRecord | null>;
  /**
   * A reactor and the formula it runs (null for inline code), read together in one statement: a
   * run needs both, and on PostgreSQL one statement is one round trip instead of two. Null when the
   * tenant has no such reactor.
   */
  getReactorAndFormula(tenantId: string, id: string): Promise<ReactorAndFormula | null>;
  listReactors(tenantId: string, filter: ReactorFilter, page: PageRequest): Promise<PageResult<ReactorRecord>>;
  /**
   * Atomically writes `changes` (only the fields given; the formula never changes). With
   * `expected`: only while the reactor is still bound to that application (the binding the
   * caller's authorization was decided on); else `changed` and nothing written.
   */
  updateReactor(tenantId: string, id: string, changes: ReactorChanges, expected?: { applicationId: string | null }): Promise<RecordUpdateResult<ReactorRecord>>;
  deleteReactor(tenantId: string, id: string): Promise<boolean>;

  // --- asynchronous reactor runs -------------------------------------------------------------
  /** Atomically stores a pending request and the job that will run it: both or neither. */
  createReactorRequest(request: ReactorRequestRecord, job: JobRecord): Promise<void>;
  /** The request of the tenant with that id (any status), or null. */
  getReactorRequest(tenantId: string, id: string): Promise<ReactorRequestRecord | null>;
  /** Marks a pending (or, after a lost worker, running) request running; startedAt keeps its first value. False once it finished or when missing. */
  startReactorRequest(tenantId: string, id: string, now: number): Promise<boolean>;
  /** Records the outcome of a request not yet finished; false (nothing written) when it already finished or is missing. */
  finishReactorRequest(tenantId: string, id: string, outcome: ReactorRequestOutcome): Promise<boolean>;
  /** Removes up to `limit` finished requests (any tenant) whose expiresAt <= now; how many it removed. */
  purgeExpiredReactorRequests(now: number, limit: number): Promise<number>;
}
