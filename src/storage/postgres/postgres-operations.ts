import type { Store } from '../store.js';
import type { AreaMethod, StoreArea, StorePart } from '../store-parts.js';
import type { Dialect } from '../sql/dialect.js';
import { postgresDialect } from '../sql/dialect.js';
import { atomicityOn, isEmbedded, RollBack, type Answer, type AreaOperations, type EmbeddedCalls, type Operation, type Step, type Steps } from '../sql/operation.js';
import type { PgExecutor, Queryable } from './pg-executor.js';

/** The embedded calls (sql/operation.ts) as this store runs them: on the body's connection (its transaction's). */
export type PostgresEmbeddedCalls = {
  [K in keyof EmbeddedCalls]: (on: Queryable, ...args: Parameters<EmbeddedCalls[K]>) => Promise<ReturnType<EmbeddedCalls[K]>>;
};

/**
 * Runs operations (sql/operation.ts) on PostgreSQL through the store's executor (pg-executor.ts:
 * prepared statements named by text, retries, error translation, timeouts). `write` operations
 * run in one transaction, started again from the top when the executor retries it; the others run
 * statement by statement on the pool, so a read costs no BEGIN and COMMIT round trips.
 */
export class PostgresOperations {
  readonly #db: PgExecutor;
  readonly dialect: Dialect;
  readonly #calls: PostgresEmbeddedCalls;

  constructor(db: PgExecutor, quotedSchema: string, calls: PostgresEmbeddedCalls) {
    this.#db = db;
    this.#calls = calls;
    this.dialect = postgresDialect(quotedSchema);
  }

  run<A extends readonly unknown[], R>(operation: Operation<A, R>, args: A): Promise<R> {
    if (atomicityOn(operation, this.dialect, args) === 'write') {
      return this.#db
        .transaction((tx) => this.drive(operation.steps(this.dialect, ...args), tx))
        .catch((error: unknown) => {
          // The executor rolled the transaction back on the throw (and retries only the database's refusals).
          if (error instanceof RollBack) return error.answer as R;
          throw error;
        });
    }
    return this.drive(operation.steps(this.dialect, ...args), this.#db);
  }

  /** Runs a body to its end on `on` (the pool, or the caller's transaction). */
  async drive<R>(steps: Steps<R>, on: Queryable): Promise<R> {
    let next = steps.next();
    while (next.done !== true) next = steps.next(await this.#answer(next.value, on));
    return next.value;
  }

  async #answer(step: Step, on: Queryable): Promise<Answer> {
    if (isEmbedded(step)) return (await (this.#calls[step.embedded] as (on: Queryable, ...args: readonly unknown[]) => Promise<unknown>)(on, ...step.args)) as Answer;
    const query = step;
    const rendered = query.sql.render(this.dialect);
    const result = await on.query(rendered.text, rendered.bind(query.args), query.shaped ? 'shaped' : 'fixed');
    return { rows: result.rows, changes: result.rowCount ?? 0 };
  }

  /** The Store methods of `operations` (an area's, or those of it written once): each runs its operation. */
  part<A extends StoreArea, M extends AreaMethod<A> = AreaMethod<A>>(operations: Pick<AreaOperations<A>, M>): Pick<StorePart<A>, M> {
    const part: Partial<Record<AreaMethod<A>, (...args: never[]) => unknown>> = {};
    for (const name of Object.keys(operations) as M[]) {
      const op = (operations as AreaOperations<A>)[name] as Operation<Parameters<Store[typeof name]>, unknown>;
      part[name] = (...args: Parameters<Store[typeof name]>) => this.run(op, args);
    }
    return part as unknown as Pick<StorePart<A>, M>;
  }
}
