import { ValidationError } from '../../errors/errors.js';
import type { PageRequest, PageResult } from '../store.js';
import { checkPositive, decodeCursor, encodeCursor } from '../page-cursor.js';
import type { Queryable } from './pg-executor.js';

// The cursor rules are shared (page-cursor.ts); their names stay importable from here.
export { checkPositive, decodeCursor, encodeCursor };

/** Positional parameters collected while a statement is built: `add` returns the placeholder. */
export class SqlParams {
  readonly values: unknown[] = [];

  /** `$n` (with `::type` when a cast is given) for this value. */
  add(value: unknown, cast?: string): string {
    this.values.push(value);
    return cast === undefined ? `$${this.values.length}` : `$${this.values.length}::${cast}`;
  }
}

/**
 * A list over rows with a bigint `seq` (creation order) aliased `t`. `where` holds at least one
 * condition; its placeholders were made by `params`.
 */
export interface ListQuery {
  columns: string;
  /** `FROM <table> t` */
  from: string;
  where: string[];
  params: SqlParams;
}

/** The SQL of one cursor page: one row more than `size`, to know whether another page follows. */
export function cursorPageSql(query: ListQuery, afterSeq: number, size: number): string {
  const where = [...query.where, `t.seq > ${query.params.add(afterSeq, 'int8')}`].join(' AND ');
  return `SELECT ${query.columns} ${query.from} WHERE ${where} ORDER BY t.seq LIMIT ${query.params.add(size + 1, 'int8')}`;
}

/**
 * The SQL of one offset page with the total count, as one statement so both come from one
 * snapshot. The page joins a one-row count, so a page past the end is still one row: its columns
 * NULL, the count present.
 */
export function offsetPageSql(query: ListQuery, offset: number, size: number): string {
  const where = query.where.join(' AND ');
  return (
    `SELECT c.total_items, p.* FROM (SELECT count(*) AS total_items ${query.from} WHERE ${where}) c ` +
    `LEFT JOIN LATERAL (SELECT ${query.columns} ${query.from} WHERE ${where} ORDER BY t.seq ` +
    `LIMIT ${query.params.add(size, 'int8')} OFFSET ${query.params.add(offset, 'int8')}) p ON true`
  );
}

/**
 * Runs a list query as one page. Cursor mode orders by seq ascending and returns `next` only when
 * another row exists; offset mode counts the matches in the same statement.
 */
export async function runPage<T>(db: Queryable, query: ListQuery, page: PageRequest, map: (row: Record<string, unknown>) => T): Promise<PageResult<T>> {
  const size = checkPositive('size', page?.size);
  if (page.mode === 'offset') {
    const number = checkPositive('page', page.page);
    const offset = (number - 1) * size;
    if (!Number.isSafeInteger(offset)) throw ValidationError.field('page', 'is too large');
    const { rows } = await db.query(offsetPageSql(query, offset, size), query.params.values, 'shaped');
    const totalItems = (rows[0]?.['total_items'] as number | undefined) ?? 0;
    const items = rows.filter((row) => row['seq'] !== null).map(map);
    return { mode: 'offset', items, totalItems };
  }
  if (page.mode !== 'cursor') throw ValidationError.field('mode', "must be 'cursor' or 'offset'");
  const afterSeq = page.start === undefined ? 0 : decodeCursor(page.start);
  const { rows } = await db.query(cursorPageSql(query, afterSeq, size), query.params.values, 'shaped');
  const more = rows.length > size;
  if (more) rows.length = size;
  return { mode: 'cursor', items: rows.map(map), next: more ? encodeCursor(rows[rows.length - 1]!['seq'] as number) : null };
}
