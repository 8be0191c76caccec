/**
 * What differs between the SQL dialects the store speaks, in one place. A statement is written
 * once (sql.ts) with pieces that each dialect spells its own way: parameters, table names (schema
 * qualified on PostgreSQL), lists bound as one parameter, locking clauses, and how rows come back
 * (JSON as text or parsed, booleans as 0/1 or true/false). A third dialect is one more Dialect and
 * an executor (docs/development.md, "Storage: one SQL text per operation").
 */
export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /** Distinguishes renderings: the same dialect with another schema renders other text. */
  readonly key: string;
  /** The text of parameter `n` (1-based), appended to `out`; `encode` adapts the bound value. */
  param(n: number, out: RenderTarget, encode?: (value: unknown) => unknown): void;
  /** A table's name as a statement spells it. */
  table(name: string): string;
  /** ` <column> IN (...)`-style membership in list parameter `n` of `type` (its items), appended to `out`. */
  inList(n: number, type: ListType, out: RenderTarget): void;
  /** A row source of list parameter `n`, with one column `value` (for INSERT ... SELECT). */
  listRows(n: number, type: ListType, out: RenderTarget): void;
  /** The locking clause, or '' where the dialect locks otherwise (SQLite writes under one lock). */
  lock(kind: LockKind): string;
  /** A JSON column's value as read back (text on SQLite, parsed on PostgreSQL). */
  json<T>(value: unknown): T;
  /** A boolean column's value as read back (0/1 on SQLite). */
  bool(value: unknown): boolean;
}

export type ListType = 'text' | 'int8';
export type LockKind = 'update' | 'share' | 'key share' | 'update skip locked';

/** Where a rendering is written: the text, and which argument each placeholder binds. */
export interface RenderTarget {
  text: string;
  /** For dialects that bind by position (SQLite's `?`): the 1-based argument of each placeholder, in order of appearance. */
  readonly order: number[];
  /** Per placeholder, how its value is encoded (null: as given). */
  readonly encoders: (((value: unknown) => unknown) | null)[];
}

const json = JSON.stringify;

/** SQLite (better-sqlite3): `?` placeholders, lists as JSON text read by json_each. */
export const sqliteDialect: Dialect = Object.freeze({
  name: 'sqlite',
  key: 'sqlite',
  param(n: number, out: RenderTarget, encode?: (value: unknown) => unknown) {
    out.text += '?';
    out.order.push(n);
    out.encoders.push(encode ?? null);
  },
  table: (name: string) => name,
  inList(n: number, _type: ListType, out: RenderTarget) {
    out.text += 'IN (SELECT value FROM json_each(';
    sqliteDialect.param(n, out, json);
    out.text += '))';
  },
  listRows(n: number, _type: ListType, out: RenderTarget) {
    out.text += 'json_each(';
    sqliteDialect.param(n, out, json);
    out.text += ')';
  },
  // One writer at a time, and every write transaction begins IMMEDIATE: nothing to lock per row.
  lock: () => '',
  json: <T>(value: unknown): T => JSON.parse(value as string) as T,
  bool: (value: unknown) => value === 1,
});

/** PostgreSQL (pg) in `schema` (already quoted): `$n` placeholders, lists as arrays. */
export function postgresDialect(quotedSchema: string): Dialect {
  const dialect: Dialect = {
    name: 'postgres',
    key: `postgres:${quotedSchema}`,
    param(n: number, out: RenderTarget) {
      // Numbered placeholders bind the arguments as given: nothing to record.
      out.text += `$${n}`;
    },
    table: (name: string) => `${quotedSchema}.${name}`,
    inList(n: number, type: ListType, out: RenderTarget) {
      out.text += '= ANY(';
      dialect.param(n, out);
      out.text += `::${type}[])`;
    },
    listRows(n: number, type: ListType, out: RenderTarget) {
      out.text += 'unnest(';
      dialect.param(n, out);
      out.text += `::${type}[]) AS value`;
    },
    lock: (kind: LockKind) => ` FOR ${kind.toUpperCase()}`,
    json: <T>(value: unknown): T => value as T,
    bool: (value: unknown) => value === true,
  };
  return Object.freeze(dialect);
}
