import { setTimeout as sleep } from 'node:timers/promises';
import type { PgPool, PgPoolClient, PgQueryConfig, PgQueryResult } from './postgres-options.js';
import { isConnectionError, isRetryable, translateError } from './pg-errors.js';
import { type StatementShape, StatementNames, isLostPreparedStatement } from './statement-names.js';
import { TYPE_PARSERS } from './type-parsers.js';

/** Runs one statement: the pool (autocommit) or a transaction's connection. */
export interface Queryable {
  /** `shape`: `shaped` for a text built from the caller's filters or fields (statement-names.ts); default `fixed`. */
  query(text: string, values?: readonly unknown[], shape?: StatementShape): Promise<PgQueryResult>;
}

/** Attempts per operation before a retryable failure is reported (the first try included). */
export const MAX_ATTEMPTS = 6;

/** Full-jitter exponential backoff: a random wait up to 4, 8, 16… ms, at most 250 ms. */
function backoffMs(attempt: number): number {
  return Math.random() * Math.min(250, 2 ** (attempt + 1));
}

/**
 * Whether work that failed on a lost connection may run again: `always` for reads and for a
 * transaction that had not sent COMMIT (the server rolled it back); `never` for a lone write or a
 * COMMIT whose answer was lost (it may have committed: running it again could apply it twice, so
 * the caller gets a 503 and retries with its Idempotency-Key).
 */
type ConnectionRetry = 'always' | 'never';

/** A failure while COMMIT was in flight: the transaction may or may not have committed. */
class CommitOutcomeUnknown extends Error {
  constructor(readonly lost: unknown) {
    super('The connection was lost while committing');
  }
}

/**
 * Runs `fn` again after a serialization failure or deadlock (the database rolled it back, so it
 * is safe to repeat), and once more on a fresh connection after a lost connection when `onLost`
 * allows it; translates the error that ends it (pg-errors.ts: a lost connection becomes a 503).
 */
export async function retrying<T>(fn: () => Promise<T>, onLost: ConnectionRetry = 'never'): Promise<T> {
  let reconnected = false;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (thrown) {
      const error = thrown instanceof CommitOutcomeUnknown ? thrown.lost : thrown;
      if (isRetryable(error) && attempt < MAX_ATTEMPTS) {
        await sleep(backoffMs(attempt));
        continue;
      }
      // A failed pool.query or a discarded transaction client is not returned to the pool: the next
      // attempt gets another connection (or opens one).
      if (isConnectionError(error) && onLost === 'always' && !(thrown instanceof CommitOutcomeUnknown) && !reconnected) {
        reconnected = true;
        continue;
      }
      throw translateError(error);
    }
  }
}

/** A statement that only reads (a lone SELECT): safe to run again after a lost connection. */
export function isRead(text: string): boolean {
  return /^\s*SELECT\b/i.test(text);
}

const ignore = () => undefined;

/**
 * The store's access to PostgreSQL: every query goes with the store's column parsers, and is
 * retried and translated in one place.
 *
 * With `preparedStatements`, statements with parameters are named, so that each connection parses
 * and plans one once (half the database's CPU of a token read, docs/scaling.md); the others (BEGIN,
 * COMMIT, migrations' scripts) go by the simple protocol. A named statement lives on one server
 * connection: a pooler in transaction mode that does not carry it over (PgBouncer before 1.21)
 * answers a later use on another connection with an error, and the executor then stops naming
 * statements and runs the failed work again (the statement did not run; a transaction was rolled
 * back).
 */
export class PgExecutor implements Queryable {
  readonly #pool: PgPool;
  #names: StatementNames | null;

  constructor(pool: PgPool, options: { preparedStatements?: boolean } = {}) {
    this.#pool = pool;
    this.#names = options.preparedStatements === true ? new StatementNames() : null;
  }

  /** Whether statements are still named (false from the start, or since a pooler lost one). */
  get naming(): boolean {
    return this.#names !== null;
  }

  /** Runs `work`; when a named statement was lost (a pooler), stops naming and runs it once more, unnamed. */
  async #unnamedIfLost<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!isLostPreparedStatement(error)) throw error;
      this.#names = null;
      return work();
    }
  }

  #config(text: string, values: readonly unknown[], shape: StatementShape = 'fixed'): PgQueryConfig {
    const name = this.#names !== null && values.length > 0 ? this.#names.of(text, shape) : undefined;
    return name === undefined ? { text, values: [...values], types: TYPE_PARSERS } : { name, text, values: [...values], types: TYPE_PARSERS };
  }

  /**
   * One statement on its own (autocommit): atomic by itself. A read is run again once on a fresh
   * connection when its connection was lost; a write is not (see ConnectionRetry).
   */
  query(text: string, values: readonly unknown[] = [], shape?: StatementShape): Promise<PgQueryResult> {
    return this.#unnamedIfLost(() => retrying(() => this.#pool.query(this.#config(text, values, shape)), isRead(text) ? 'always' : 'never'));
  }

  /**
   * Runs `fn` in a READ COMMITTED transaction on one connection, committing when it returns and
   * rolling back when it throws. The whole transaction is retried (after a serialization failure,
   * and once on a fresh connection when the connection was lost before COMMIT was sent), so `fn`
   * must only touch the database (no side effects outside it that a second run would repeat).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.#unnamedIfLost(() => this.#transaction(fn));
  }

  #transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return retrying(() =>
      this.#withClient(async (tx, discard) => {
        // Explicitly READ COMMITTED, whatever the database's default: the store's transactions take
        // a lock and then rely on their next statement seeing what the lock's previous holder
        // committed, which a transaction-wide snapshot (REPEATABLE READ, SERIALIZABLE) would hide.
        await tx.query('BEGIN ISOLATION LEVEL READ COMMITTED');
        try {
          const result = await fn(tx);
          try {
            await tx.query('COMMIT');
          } catch (error) {
            discard();
            throw isConnectionError(error) ? new CommitOutcomeUnknown(error) : error;
          }
          return result;
        } catch (error) {
          if (error instanceof CommitOutcomeUnknown) throw error;
          // A connection that cannot roll back (it died) must not return to the pool mid-transaction.
          if (isConnectionError(error)) discard();
          else await tx.query('ROLLBACK').catch(discard);
          throw error;
        }
      }),
      'always',
    );
  }

  /**
   * Runs `fn` while one connection keeps a transaction open, after `begin` ran in it (withLock takes
   * a transaction-scoped advisory lock there). What `begin` takes lasts until `fn` settles and ends
   * with the transaction (COMMIT, or the connection's loss), so it holds behind a pooler in
   * transaction mode, where no session state survives a transaction (docs/scaling.md). `fn` queries
   * through other connections and is never run again here: its effects are its own.
   */
  holding<T>(begin: (tx: Queryable) => Promise<void>, fn: () => Promise<T>): Promise<T> {
    return this.#holding(begin, fn, true);
  }

  /** `again`: whether a named statement `begin` lost may start it over (once, unnamed). */
  async #holding<T>(begin: (tx: Queryable) => Promise<void>, fn: () => Promise<T>, again: boolean): Promise<T> {
    let began = false;
    try {
      return await this.#withClient(async (tx, discard) => {
        try {
          await tx.query('BEGIN');
          await begin(tx);
        } catch (error) {
          // A connection that cannot roll back (it died) must not return to the pool mid-transaction.
          await tx.query('ROLLBACK').catch(discard);
          throw error;
        }
        began = true;
        try {
          return await fn();
        } finally {
          // The transaction only held locks: a failed COMMIT is ended by closing the connection,
          // which releases them too, and changes nothing `fn` did.
          await tx.query('COMMIT').catch(discard);
        }
      });
    } catch (error) {
      // `begin` lost a named statement (a pooler): nothing is held and `fn` has not run.
      if (!began && again && isLostPreparedStatement(error)) {
        this.#names = null;
        return this.#holding(begin, fn, false);
      }
      // Not reaching the database is a 503 like any store call; what `fn` throws is its own.
      throw began ? error : translateError(error);
    }
  }

  async #withClient<T>(fn: (client: Queryable, discard: () => void) => Promise<T>): Promise<T> {
    const client: PgPoolClient = await this.#pool.connect();
    // While checked out, pg leaves a connection's 'error' event without a listener: a connection
    // lost between two statements would crash the process. The failing query reports it instead.
    client.on?.('error', ignore);
    let discarded = false;
    try {
      const queryable: Queryable = { query: (text, values = [], shape) => client.query(this.#config(text, values, shape)) };
      return await fn(queryable, () => {
        discarded = true;
      });
    } finally {
      client.removeListener?.('error', ignore);
      client.release(discarded ? true : undefined);
    }
  }
}
