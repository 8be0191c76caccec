import type { BetterSqlite3Database, SqliteStatement } from './sqlite-options.js';

/**
 * Prepared statements keyed by their SQL text, each prepared once. Fixed statements (`get`) stay for
 * the life of the store. Generated ones (`generated`: list filters whose SQL depends on how many
 * metadata keys are given) are bounded: past `limit` the least recently used one is dropped, so
 * callers choosing odd filter shapes cannot grow memory without bound.
 */
export class StatementCache {
  #db: BetterSqlite3Database;
  #fixed = new Map<string, SqliteStatement>();
  #values = new Map<string, SqliteStatement>();
  #generated = new Map<string, SqliteStatement>();
  #limit: number;

  constructor(db: BetterSqlite3Database, limit = 200) {
    this.#db = db;
    this.#limit = limit;
  }

  /** The prepared statement for a constant SQL text. */
  get(sql: string): SqliteStatement {
    let statement = this.#fixed.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#fixed.set(sql, statement);
    }
    return statement;
  }

  /** The prepared statement for a constant SQL text, returning rows as arrays of column values. */
  values(sql: string): SqliteStatement {
    let statement = this.#values.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql).raw(true);
      this.#values.set(sql, statement);
    }
    return statement;
  }

  /** The prepared statement for a generated SQL text, kept in a bounded LRU. */
  generated(sql: string): SqliteStatement {
    return this.#lru(sql, false);
  }

  /** `generated`, returning rows as arrays of column values. */
  generatedValues(sql: string): SqliteStatement {
    return this.#lru(sql, true);
  }

  #lru(sql: string, raw: boolean): SqliteStatement {
    // One LRU for both modes: a statement's mode is its own, so the key says which.
    const key = raw ? `values:${sql}` : `rows:${sql}`;
    let statement = this.#generated.get(key);
    if (statement !== undefined) {
      this.#generated.delete(key);
    } else {
      statement = raw ? this.#db.prepare(sql).raw(true) : this.#db.prepare(sql);
      if (this.#generated.size >= this.#limit) this.#generated.delete(this.#generated.keys().next().value as string);
    }
    this.#generated.set(key, statement);
    return statement;
  }
}
