import { ValidationError } from '../../errors/errors.js';
import type { PageRequest, PageResult } from '../store-paging.js';
import { query, type Row, type Steps } from './operation.js';
import { sql, type Piece, type Sql } from './sql.js';

const CURSOR_PATTERN = /^[1-9][0-9]{0,15}$/;

/** The opaque cursor after the row with this seq: base64url of its decimal digits. */
export function encodeCursor(seq: number): string {
  return Buffer.from(String(seq), 'utf8').toString('base64url');
}

/** The seq a cursor stands for; ValidationError on `start` for anything this store did not issue. */
export function decodeCursor(start: string): number {
  const digits = typeof start === 'string' ? Buffer.from(start, 'base64url').toString('utf8') : '';
  // Re-encoding must give the same text: rejects padding, stray characters and other spellings.
  if (!CURSOR_PATTERN.test(digits) || !Number.isSafeInteger(Number(digits)) || encodeCursor(Number(digits)) !== start) {
    throw ValidationError.field('start', 'is not a valid cursor');
  }
  return Number(digits);
}

export function checkPositive(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw ValidationError.field(field, 'must be a whole number of at least 1');
  return value;
}

/** The two statements of a list in creation order: a cursor page, and an offset page with its count. */
export interface PageStatements {
  readonly cursor: Sql;
  readonly offset: Sql;
}

/**
 * The page statements of a list over rows with a `seq` (creation order) aliased `t`. `from` is
 * `FROM <table> t WHERE <conditions>` using arguments 1 to `filterArgs`; `columns` must include
 * t.seq. The cursor page asks one row more than its size, to know whether another page follows.
 * The offset page is one statement, so the count and the rows come from one snapshot on both
 * stores: the rows joined to a one-row count, so a page past the end is still one row (its
 * columns NULL, the count present).
 */
export function pageStatements(columns: Piece, from: Sql, filterArgs: number): PageStatements {
  const k = filterArgs;
  return Object.freeze({
    cursor: sql`SELECT ${columns} ${from} AND t.seq > ${k + 1} ORDER BY t.seq LIMIT ${k + 2}`,
    offset: sql`SELECT c.total_items, p.* FROM (SELECT count(*) AS total_items ${from}) c LEFT JOIN (SELECT ${columns} ${from} ORDER BY t.seq LIMIT ${k + 1} OFFSET ${k + 2}) p ON true`,
  });
}

/** One page of a list (see pageStatements): `filter` binds its conditions' arguments. One statement. */
export function* page<T>(statements: PageStatements, filter: readonly unknown[], request: PageRequest, map: (row: Row) => T): Steps<PageResult<T>> {
  const size = checkPositive('size', request?.size);
  if (request.mode === 'offset') {
    const number = checkPositive('page', request.page);
    const offset = (number - 1) * size;
    if (!Number.isSafeInteger(offset)) throw ValidationError.field('page', 'is too large');
    const { rows } = yield query(statements.offset, ...filter, size, offset);
    const totalItems = (rows[0]?.['total_items'] as number | undefined) ?? 0;
    return { mode: 'offset', items: rows.filter((row) => row['seq'] !== null).map(map), totalItems };
  }
  if (request.mode !== 'cursor') throw ValidationError.field('mode', "must be 'cursor' or 'offset'");
  const afterSeq = request.start === undefined ? 0 : decodeCursor(request.start);
  const { rows } = yield query(statements.cursor, ...filter, afterSeq, size + 1);
  const items = rows.length > size ? rows.slice(0, size) : rows;
  return { mode: 'cursor', items: items.map(map), next: rows.length > size ? encodeCursor(items[items.length - 1]!['seq'] as number) : null };
}
