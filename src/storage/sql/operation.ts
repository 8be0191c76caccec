import type { AuditChainHead, AuditEntry, AuditSealer, ContainerScope, CreateTokenResult, Store, StoredToken } from '../store.js';
import type { AreaMethod, StoreArea } from '../store-parts.js';
import type { Dialect } from './dialect.js';
import type { Sql } from './sql.js';

/** A row as a driver answers it: column name to value. */
export type Row = Record<string, unknown>;

/** One statement to run with its arguments. `shaped`: a text built per call from the caller's choices (statement caches bound those). */
export interface Query {
  readonly sql: Sql;
  readonly args: readonly unknown[];
  readonly shaped: boolean;
}

/** What a statement answered: its rows (a SELECT, or RETURNING), and how many rows it changed. */
export interface Answer {
  readonly rows: readonly Row[];
  readonly changes: number;
}

/**
 * An operation's body: a generator that yields each statement it runs and receives its answer. The
 * same body runs synchronously on SQLite (inside better-sqlite3's transaction) and asynchronously
 * on PostgreSQL (each answer awaited): the meaning is written once, and neither store's execution
 * pays for the other's. A body touches nothing but the database, since a PostgreSQL transaction may
 * run it again after a serialization failure.
 */
export type Steps<R> = Generator<Step, R, Answer>;

/** What a body yields: a statement, or a call into a part not written once (see embedded). */
export type Step = Query | EmbeddedCall;

/**
 * The calls a body may make into store parts each store still writes itself, run by the executor
 * inside the body's transaction (SQLite: synchronously in its BEGIN IMMEDIATE; PostgreSQL: on the
 * transaction's connection). A token intent's conversion creates its token with the token area's
 * own creation (dedupe probe, group-commit layout), which is not a shared area; audit retention
 * seals with each store's chain writer (areas/audit.ts says why that stays per store).
 */
export interface EmbeddedCalls {
  createToken(token: StoredToken, now: number, within: readonly ContainerScope[] | undefined): CreateTokenResult;
  /**
   * Locks the heads of `sealer.tenants` and of `fresh`'s tenants (creating missing ones), seals
   * their unsealed entries, then writes `fresh` sealed; answers each of those tenants' heads after.
   */
  sealAudit(fresh: readonly AuditEntry[], sealer: AuditSealer): ReadonlyMap<string, AuditChainHead>;
}

export interface EmbeddedCall {
  readonly embedded: keyof EmbeddedCalls;
  readonly args: readonly unknown[];
}

/** Runs the embedded call `name` in the body's transaction and answers its result (`yield* embedded(...)`). */
export function* embedded<K extends keyof EmbeddedCalls>(name: K, ...args: Parameters<EmbeddedCalls[K]>): Generator<Step, ReturnType<EmbeddedCalls[K]>, Answer> {
  // The executor answers an embedded call with the call's own result, not with rows.
  return (yield { embedded: name, args }) as unknown as ReturnType<EmbeddedCalls[K]>;
}

export const isEmbedded = (step: Step): step is EmbeddedCall => 'embedded' in step;

/**
 * Thrown by a `write` body to undo what it wrote and answer `answer`: the executor rolls the
 * transaction back and returns it (a conversion whose token id is taken keeps its intent).
 */
export class RollBack {
  constructor(readonly answer: unknown) {}
}

/**
 * How much of the database an operation holds:
 * - `statement`: its statements are each atomic alone (most are one statement);
 * - `read`: reads only; SQLite runs them in one snapshot, PostgreSQL one statement at a time (each
 *   body is written so that READ COMMITTED statements give the same answer);
 * - `write`: one write transaction (BEGIN IMMEDIATE on SQLite, READ COMMITTED with the body's row
 *   locks on PostgreSQL).
 */
export type Atomicity = 'statement' | 'read' | 'write';

export interface Operation<A extends readonly unknown[], R> {
  /**
   * Its atomicity, or the choice of it by dialect and arguments (a body that is one statement on
   * one dialect and several on another; an update that needs its guard's transaction only when
   * the caller asks for the guard).
   */
  readonly atomicity: Atomicity | ((dialect: Dialect, ...args: A) => Atomicity);
  readonly steps: (dialect: Dialect, ...args: A) => Steps<R>;
}

// The arguments' types come from the body (the area's Store method types it): NoInfer keeps an atomicity function from choosing them.
export function operation<A extends readonly unknown[], R>(atomicity: NoInfer<Operation<A, R>['atomicity']>, steps: (dialect: Dialect, ...args: A) => Steps<R>): Operation<A, R> {
  return Object.freeze({ atomicity, steps });
}

/** The operation's atomicity on `dialect` for `args`. */
export function atomicityOn<A extends readonly unknown[]>(operation: Operation<A, unknown>, dialect: Dialect, args: A): Atomicity {
  return typeof operation.atomicity === 'function' ? operation.atomicity(dialect, ...args) : operation.atomicity;
}

/** The statement `sql` with `args` (argument n of the text is args[n - 1]). */
export function query(statement: Sql, ...args: unknown[]): Query {
  return { sql: statement, args, shaped: false };
}

/** A statement built for this call from the caller's filters or fields (see Query.shaped). */
export function shapedQuery(statement: Sql, args: readonly unknown[]): Query {
  return { sql: statement, args, shaped: true };
}

/** Every operation of one store area, under the Store's method names and types: one body per method. */
export type AreaOperations<A extends StoreArea> = {
  [K in AreaMethod<A>]: Operation<Parameters<Store[K]>, Awaited<ReturnType<Store[K]>>>;
};
