import { setTimeout as sleep } from 'node:timers/promises';
import type { PgPool, PgPoolClient, PgQueryConfig, PgQueryResult, PostgresTimeouts } from './postgres-options.js';
import { databaseWait, isConnectionError, isRetryable, translateError } from './pg-errors.js';
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

/** The store's backstop passed: the statement may still run on that connection. */
function isUnanswered(error: unknown): boolean {
  return databaseWait(error) === 'answer_timeout';
}

/** A statement that only reads (a lone SELECT): safe to run again after a lost connection. */
export function isRead(text: string): boolean {
  return /^\s*SELECT\b/i.test(text);
}

const ignore = () => undefined;

/**
 * How much longer than the statement timeout the store itself waits for an answer (pg's
 * query_timeout), so that the server's cancellation (57014, the connection still usable) comes
 * first when the timeout is in effect there; where it is not (behind PgBouncer, a lone statement:
 * docs/storage.md, "Timeouts"), this backstop is the bound.
 */
export const ANSWER_MARGIN_MS = 1_000;

/** What one kind of work runs under: text appended to its BEGIN, and the backstop of each statement (ms). */
interface Bounds {
  readonly local: string;
  readonly answerMs: number | undefined;
}

const NO_BOUNDS: Bounds = Object.freeze({ local: '', answerMs: undefined });

/**
 * `SET LOCAL` of each timeout set, in the BEGIN's simple query (one round trip, and the settings
 * go with the transaction, so they hold behind a pooler in transaction mode). A value of 0 is left
 * to the server, except where `explicit` (migrations: no bound, whatever the server's default).
 */
function boundsOf(settings: Readonly<Record<string, number>>, statementMs: number, explicit: boolean): Bounds {
  const local = Object.entries(settings)
    .filter(([, ms]) => explicit || ms > 0)
    .map(([name, ms]) => `; SET LOCAL ${name} = ${ms}`)
    .join('');
  return Object.freeze({ local, answerMs: statementMs > 0 ? statementMs + ANSWER_MARGIN_MS : undefined });
}

/** The work of one request (`request`) or a schema change or setup under a lock (`migration`). */
export type WorkKind = 'request' | 'migration';

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
  readonly #bounds: Readonly<Record<WorkKind, Bounds>>;
  /** withLock's transaction idles by design while its callback runs: no idle bound there. */
  readonly #holdingBounds: Bounds;

  /** `timeouts`: the store's bounds (docs/storage.md, "Timeouts"); without them, none are set. */
  constructor(pool: PgPool, options: { preparedStatements?: boolean; timeouts?: PostgresTimeouts } = {}) {
    this.#pool = pool;
    this.#names = options.preparedStatements === true ? new StatementNames() : null;
    const t = options.timeouts;
    if (t === undefined) {
      this.#bounds = { request: NO_BOUNDS, migration: NO_BOUNDS };
      this.#holdingBounds = NO_BOUNDS;
      return;
    }
    const migration = { statement_timeout: t.migrationTimeoutMs, lock_timeout: t.migrationTimeoutMs };
    this.#bounds = Object.freeze({
      request: boundsOf(
        { statement_timeout: t.statementTimeoutMs, lock_timeout: t.lockTimeoutMs, idle_in_transaction_session_timeout: t.idleInTransactionTimeoutMs },
        t.statementTimeoutMs,
        false,
      ),
      migration: boundsOf(migration, t.migrationTimeoutMs, true),
    });
    this.#holdingBounds = boundsOf({ ...migration, idle_in_transaction_session_timeout: 0 }, t.migrationTimeoutMs, true);
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

  #config(text: string, values: readonly unknown[], answerMs: number | undefined, shape: StatementShape = 'fixed'): PgQueryConfig {
    const name = this.#names !== null && values.length > 0 ? this.#names.of(text, shape) : undefined;
    const config: PgQueryConfig = name === undefined ? { text, values: [...values], types: TYPE_PARSERS } : { name, text, values: [...values], types: TYPE_PARSERS };
    if (answerMs !== undefined) config.query_timeout = answerMs;
    return config;
  }

  /**
   * One statement on its own (autocommit): atomic by itself. A read is run again once on a fresh
   * connection when its connection was lost; a write is not (see ConnectionRetry).
   */
  query(text: string, values: readonly unknown[] = [], shape?: StatementShape): Promise<PgQueryResult> {
    const { answerMs } = this.#bounds.request;
    return this.#unnamedIfLost(() => retrying(() => this.#pool.query(this.#config(text, values, answerMs, shape)), isRead(text) ? 'always' : 'never'));
  }

  /**
   * Runs `fn` in a READ COMMITTED transaction on one connection, committing when it returns and
   * rolling back when it throws. The whole transaction is retried (after a serialization failure,
   * and once on a fresh connection when the connection was lost before COMMIT was sent), so `fn`
   * must only touch the database (no side effects outside it that a second run would repeat).
   * A wait cut short (a statement or lock timeout) is not retried: the caller gets the 503.
   * `kind`: `migration` runs under migrationTimeoutMs instead of the request bounds.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, kind: WorkKind = 'request'): Promise<T> {
    return this.#unnamedIfLost(() => this.#transaction(fn, this.#bounds[kind]));
  }

  #transaction<T>(fn: (tx: Queryable) => Promise<T>, bounds: Bounds): Promise<T> {
    return retrying(
      () =>
        this.#withClient(bounds, async (tx, discard) => {
          // Explicitly READ COMMITTED, whatever the database's default: the store's transactions take
          // a lock and then rely on their next statement seeing what the lock's previous holder
          // committed, which a transaction-wide snapshot (REPEATABLE READ, SERIALIZABLE) would hide.
          await tx.query(`BEGIN ISOLATION LEVEL READ COMMITTED${bounds.local}`);
          try {
            const result = await fn(tx);
            try {
              await tx.query('COMMIT');
            } catch (error) {
              discard();
              throw isConnectionError(error) || isUnanswered(error) ? new CommitOutcomeUnknown(error) : error;
            }
            return result;
          } catch (error) {
            if (error instanceof CommitOutcomeUnknown) throw error;
            // A connection that cannot roll back (it died) must not return to the pool mid-transaction;
            // nor one whose statement still runs past the backstop (a ROLLBACK would wait behind it).
            if (isConnectionError(error) || isUnanswered(error)) discard();
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
      return await this.#withClient(this.#holdingBounds, async (tx, discard) => {
        try {
          await tx.query(`BEGIN${this.#holdingBounds.local}`);
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

  async #withClient<T>(bounds: Bounds, fn: (client: Queryable, discard: () => void) => Promise<T>): Promise<T> {
    const client: PgPoolClient = await this.#pool.connect();
    // While checked out, pg leaves a connection's 'error' event without a listener: a connection
    // lost between two statements would crash the process. The failing query reports it instead.
    client.on?.('error', ignore);
    let discarded = false;
    try {
      const queryable: Queryable = { query: (text, values = [], shape) => client.query(this.#config(text, values, bounds.answerMs, shape)) };
      return await fn(queryable, () => {
        discarded = true;
      });
    } finally {
      client.removeListener?.('error', ignore);
      client.release(discarded ? true : undefined);
    }
  }
}
