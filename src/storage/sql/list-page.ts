import { ValidationError } from '../../errors/errors.js';
import { checkPositive, decodeCursor, encodeCursor } from '../page-cursor.js';
import type { PageRequest, PageResult } from '../store-paging.js';
import { query, type Row, type Steps } from './operation.js';
import { sql, type Piece, type Sql } from './sql.js';

/** The two statements of one list (store-paging.ts): a cursor page, and an offset page with its count. */
export interface ListStatements {
  readonly cursor: Sql;
  readonly offset: Sql;
}

/**
 * The pages of `SELECT <columns> <from>`, where `from` is `FROM <table> t WHERE <conditions>` over
 * arguments 1 to `args`, ordered by `t.seq` (creation order; the selected columns include it).
 * - cursor: one row more than the page, to know whether another follows;
 * - offset: the page joined to a one-row count, so both come from one snapshot in one statement on
 *   both dialects (READ COMMITTED on PostgreSQL, and no read transaction on SQLite); a page past
 *   the end is still that one row, its columns NULL. The LEFT JOIN keeps the page's order: its
 *   left side is the single count row, so the page is the inner side of the loop on both databases.
 */
export function listStatements(columns: Piece, from: Sql, args: number): ListStatements {
  return Object.freeze({
    cursor: sql`SELECT ${columns} ${from} AND t.seq > ${args + 1} ORDER BY t.seq LIMIT ${args + 2}`,
    offset: sql`SELECT c.total_items, p.* FROM (SELECT count(*) AS total_items ${from}) c LEFT JOIN (SELECT ${columns} ${from} ORDER BY t.seq LIMIT ${args + 1} OFFSET ${args + 2}) p ON true`,
  });
}

/** The statements of every list in `lists`, named `<list>.cursor` and `<list>.offset` (for store-statements.test.ts). */
export function listStatementsByName(lists: Record<string, ListStatements>): Record<string, Sql> {
  return Object.fromEntries(Object.entries(lists).flatMap(([name, list]) => [[`${name}.cursor`, list.cursor] as const, [`${name}.offset`, list.offset] as const]));
}

/** One page of `list` with the arguments of its conditions: the body of a list operation (atomicity `statement`). */
export function* pageSteps<T>(list: ListStatements, args: readonly unknown[], page: PageRequest, map: (row: Row) => T): Steps<PageResult<T>> {
  const size = checkPositive('size', page?.size);
  if (page.mode === 'offset') {
    const offset = (checkPositive('page', page.page) - 1) * size;
    if (!Number.isSafeInteger(offset)) throw ValidationError.field('page', 'is too large');
    const { rows } = yield query(list.offset, ...args, size, offset);
    const totalItems = (rows[0]?.['total_items'] as number | undefined) ?? 0;
    return { mode: 'offset', items: rows.filter((row) => row['seq'] !== null).map(map), totalItems };
  }
  if (page.mode !== 'cursor') throw ValidationError.field('mode', "must be 'cursor' or 'offset'");
  const afterSeq = page.start === undefined ? 0 : decodeCursor(page.start);
  const { rows } = yield query(list.cursor, ...args, afterSeq, size + 1);
  const more = rows.length > size;
  const items = (more ? rows.slice(0, size) : rows).map(map);
  return { mode: 'cursor', items, next: more ? encodeCursor(rows[size - 1]!['seq'] as number) : null };
}
