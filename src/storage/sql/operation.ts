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

/**
 * A choice of atomicity per call. Declared as a method so that its arguments compare bivariantly:
 * a body that names an optional argument of the Store method without `?` still fits the method.
 */
type AtomicityChoice<A extends readonly unknown[]> = { choose(dialect: Dialect, args: A): Atomicity }['choose'];

export interface Operation<A extends readonly unknown[], R> {
  /**
   * Its atomicity, or the choice of it by dialect and arguments: a body that is one statement on
   * one dialect and several on another, or that takes row locks only for some arguments (a
   * transaction costs PostgreSQL two round trips, paid only by the calls that need one).
   */
  readonly atomicity: Atomicity | AtomicityChoice<A>;
  readonly steps: (dialect: Dialect, ...args: A) => Steps<R>;
}

export function operation<A extends readonly unknown[], R>(
  // NoInfer: the arguments' types come from the body (and the area's method), not from this choice.
  atomicity: Atomicity | ((dialect: Dialect, args: NoInfer<A>) => Atomicity),
  steps: (dialect: Dialect, ...args: A) => Steps<R>,
): Operation<A, R> {
  return Object.freeze({ atomicity, steps });
}

/** The operation's atomicity on `dialect` for the call with `args`. */
export function atomicityOn<A extends readonly unknown[]>(operation: Operation<A, unknown>, dialect: Dialect, args: A): Atomicity {
  return typeof operation.atomicity === 'function' ? operation.atomicity(dialect, args) : operation.atomicity;
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
