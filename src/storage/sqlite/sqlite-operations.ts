import type { Store } from '../store.js';
import type { AreaMethod, StoreArea } from '../store-parts.js';
import { sqliteDialect } from '../sql/dialect.js';
import {
  atomicityOn,
  isEmbedded,
  RollBack,
  type Answer,
  type AreaOperations,
  type EmbeddedCalls,
  type Operation,
  type Query,
  type Row,
  type Step,
  type Steps,
} from '../sql/operation.js';
import type { SqlitePart } from './sqlite-boundary.js';
import type { BetterSqlite3Database } from './sqlite-options.js';
import type { StatementCache } from './statement-cache.js';

const NO_ROWS: readonly Row[] = Object.freeze([]);

/**
 * Runs operations (sql/operation.ts) on the SQLite store's synchronous core: each statement is
 * rendered once, prepared once (StatementCache), and answered in the same call, so an operation
 * is one synchronous call that composes inside a transaction (group commit, createTenant).
 */
export class SqliteOperations {
  readonly #statements: StatementCache;
  readonly #transaction: { immediate<T>(fn: () => T): T; deferred<T>(fn: () => T): T };
  readonly #calls: EmbeddedCalls;

  /** `calls`: the embedded calls (sql/operation.ts), each run synchronously in the caller's transaction. */
  constructor(db: BetterSqlite3Database, statements: StatementCache, calls: EmbeddedCalls) {
    this.#statements = statements;
    this.#calls = calls;
    const tx = db.transaction((fn: () => unknown) => fn());
    this.#transaction = {
      immediate: <T>(fn: () => T): T => tx.immediate(fn) as T,
      deferred: <T>(fn: () => T): T => tx.deferred(fn) as T,
    };
  }

  /** One operation, with its atomicity (a write in BEGIN IMMEDIATE; a read in one snapshot). */
  run<A extends readonly unknown[], R>(operation: Operation<A, R>, args: A): R {
    switch (atomicityOn(operation, sqliteDialect, args)) {
      case 'statement':
        return this.drive(operation.steps(sqliteDialect, ...args));
      case 'read':
        return this.#transaction.deferred(() => this.drive(operation.steps(sqliteDialect, ...args)));
      case 'write':
        try {
          return this.#transaction.immediate(() => this.drive(operation.steps(sqliteDialect, ...args)));
        } catch (error) {
          // better-sqlite3 rolled the transaction back on the throw.
          if (error instanceof RollBack) return error.answer as R;
          throw error;
        }
    }
  }

  /** Runs a body to its end, in whatever transaction the caller holds. */
  drive<R>(steps: Steps<R>): R {
    let next = steps.next();
    while (next.done !== true) next = steps.next(this.#answer(next.value));
    return next.value;
  }

  #answer(step: Step): Answer {
    if (isEmbedded(step)) return (this.#calls[step.embedded] as (...args: readonly unknown[]) => unknown)(...step.args) as Answer;
    return this.#query(step);
  }

  #query(query: Query): Answer {
    const rendered = query.sql.render(sqliteDialect);
    const statement = query.shaped ? this.#statements.generated(rendered.text) : this.#statements.get(rendered.text);
    const values = rendered.bind(query.args);
    if (statement.reader) {
      const rows = statement.all(...values) as Row[];
      return { rows, changes: rows.length };
    }
    return { rows: NO_ROWS, changes: statement.run(...values).changes };
  }

  /** The Store methods of `operations` (an area's, or those of it written once) as the core has them: each runs its operation synchronously. */
  part<A extends StoreArea, M extends AreaMethod<A> = AreaMethod<A>>(operations: Pick<AreaOperations<A>, M>): Pick<SqlitePart<A>, M> {
    const part: Partial<Record<AreaMethod<A>, (...args: never[]) => unknown>> = {};
    for (const name of Object.keys(operations) as M[]) {
      const op = (operations as AreaOperations<A>)[name] as Operation<Parameters<Store[typeof name]>, unknown>;
      part[name] = (...args: Parameters<Store[typeof name]>) => this.run(op, args);
    }
    return part as Pick<SqlitePart<A>, M>;
  }
}
