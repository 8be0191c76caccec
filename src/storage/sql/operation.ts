import type { Store } from '../store.js';
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
export type Steps<R> = Generator<Query, R, Answer>;

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
  readonly atomicity: Atomicity;
  readonly steps: (dialect: Dialect, ...args: A) => Steps<R>;
}

export function operation<A extends readonly unknown[], R>(atomicity: Atomicity, steps: (dialect: Dialect, ...args: A) => Steps<R>): Operation<A, R> {
  return Object.freeze({ atomicity, steps });
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
