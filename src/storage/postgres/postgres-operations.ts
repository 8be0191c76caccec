import type { Store } from '../store.js';
import type { AreaMethod, StoreArea, StorePart } from '../store-parts.js';
import type { Dialect } from '../sql/dialect.js';
import { postgresDialect } from '../sql/dialect.js';
import { atomicityOn, type Answer, type AreaOperations, type Operation, type Query, type Steps } from '../sql/operation.js';
import type { PgExecutor, Queryable } from './pg-executor.js';

/**
 * Runs operations (sql/operation.ts) on PostgreSQL through the store's executor (pg-executor.ts:
 * prepared statements named by text, retries, error translation, timeouts). `write` operations
 * run in one transaction, started again from the top when the executor retries it; the others run
 * statement by statement on the pool, so a read costs no BEGIN and COMMIT round trips.
 */
export class PostgresOperations {
  readonly #db: PgExecutor;
  readonly dialect: Dialect;

  constructor(db: PgExecutor, quotedSchema: string) {
    this.#db = db;
    this.dialect = postgresDialect(quotedSchema);
  }

  run<A extends readonly unknown[], R>(operation: Operation<A, R>, args: A): Promise<R> {
    if (atomicityOn(operation, this.dialect, args) === 'write') return this.#db.transaction((tx) => this.drive(operation.steps(this.dialect, ...args), tx));
    return this.drive(operation.steps(this.dialect, ...args), this.#db);
  }

  /** Runs a body to its end on `on` (the pool, or the caller's transaction). */
  async drive<R>(steps: Steps<R>, on: Queryable): Promise<R> {
    let next = steps.next();
    while (next.done !== true) next = steps.next(await this.#answer(next.value, on));
    return next.value;
  }

  async #answer(query: Query, on: Queryable): Promise<Answer> {
    const rendered = query.sql.render(this.dialect);
    const result = await on.query(rendered.text, rendered.bind(query.args), query.shaped ? 'shaped' : 'fixed');
    return { rows: result.rows, changes: result.rowCount ?? 0 };
  }

  /** The area's Store methods: each runs its operation. */
  part<A extends StoreArea>(operations: AreaOperations<A>): StorePart<A> {
    const part: Partial<Record<AreaMethod<A>, (...args: never[]) => unknown>> = {};
    for (const name of Object.keys(operations) as AreaMethod<A>[]) {
      const op = operations[name] as Operation<Parameters<Store[typeof name]>, unknown>;
      part[name] = (...args: Parameters<Store[typeof name]>) => this.run(op, args);
    }
    return part as unknown as StorePart<A>;
  }
}
