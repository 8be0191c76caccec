import { ValidationError } from '../../errors/errors.js';
import type { PageRequest, PageResult } from '../store.js';
import { checkPositive, decodeCursor, encodeCursor } from '../page-cursor.js';
import type { StatementCache } from './statement-cache.js';

// The cursor rules are shared (page-cursor.ts); their names stay importable from here.
export { checkPositive, decodeCursor, encodeCursor };

/**
 * A list query over rows with an INTEGER seq (creation order). `from` is `FROM ... WHERE
 * <conditions>` with at least one condition; `params` bind its placeholders. The selected columns
 * begin with the seq: rows are read as arrays of column values (better-sqlite3's raw mode), since
 * an object per row costs a property set per column.
 */
export interface ListQuery {
  columns: string;
  from: string;
  params: unknown[];
  /** The seq expression to page and order by (default `t.seq`): the driving index's column. */
  seq?: string;
  /** True when `from` is generated (its shape varies): its statements go to the bounded cache. */
  generated?: boolean;
}

/** The SQL and parameters of one cursor page (one row more than `size`, to know whether there is a next page). */
export function cursorPageSql(query: ListQuery, afterSeq: number, size: number): { sql: string; params: unknown[] } {
  const seq = query.seq ?? 't.seq';
  return {
    sql: `SELECT ${query.columns} ${query.from} AND ${seq} > ? ORDER BY ${seq} LIMIT ?`,
    params: [...query.params, afterSeq, size + 1],
  };
}

/**
 * Runs a list query as one page. Cursor mode orders by seq ascending and returns `next` only when
 * another row exists; offset mode counts the matches in the same read transaction.
 */
export function runPage<T>(statements: StatementCache, read: <R>(fn: () => R) => R, query: ListQuery, page: PageRequest, map: (values: readonly unknown[]) => T): PageResult<T> {
  const prepare = (sql: string) => (query.generated ? statements.generated(sql) : statements.get(sql));
  const prepareValues = (sql: string) => (query.generated ? statements.generatedValues(sql) : statements.values(sql));
  const size = checkPositive('size', page?.size);
  if (page.mode === 'offset') {
    const number = checkPositive('page', page.page);
    const count = prepare(`SELECT count(*) AS n ${query.from}`);
    const items = prepareValues(`SELECT ${query.columns} ${query.from} ORDER BY ${query.seq ?? 't.seq'} LIMIT ? OFFSET ?`);
    return read(() => {
      const totalItems = (count.get(...query.params) as { n: number }).n;
      const offset = (number - 1) * size;
      const rows = offset >= totalItems ? [] : (items.all(...query.params, size, offset) as unknown[][]);
      return { mode: 'offset' as const, items: rows.map(map), totalItems };
    });
  }
  if (page.mode !== 'cursor') throw ValidationError.field('mode', "must be 'cursor' or 'offset'");
  const afterSeq = page.start === undefined ? 0 : decodeCursor(page.start);
  const { sql, params } = cursorPageSql(query, afterSeq, size);
  const rows = prepareValues(sql).all(...params) as unknown[][];
  const more = rows.length > size;
  if (more) rows.length = size;
  return { mode: 'cursor', items: rows.map(map), next: more ? encodeCursor(rows[rows.length - 1]![0] as number) : null };
}
