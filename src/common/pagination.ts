import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';
import { validationFromIssues } from '../validation/issues.js';
import type { PageRequest, PageResult } from '../storage/store.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export type Pagination =
  /** `after` repeats `next` when there is one: the name the Basis Theory SDK's types read the cursor by. */
  { page_size: number; next: string | null; after?: string } | { total_items: number; page_number: number; page_size: number; total_pages: number };

/** A list response: `{ pagination, data }`. */
export interface Paginated<T> {
  pagination: Pagination;
  data: T[];
}

export interface PageQuery {
  /** 1-based page number; giving it selects offset mode. */
  page?: number | string;
  /** Items per page, 1-100, default 20. */
  size?: number | string;
  /** Cursor from a previous page's `pagination.next` (cursor mode). */
  start?: string;
}

const positiveInt = (max: number) =>
  v.pipe(
    v.union([v.number(), v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number))]),
    v.number(),
    v.integer('must be a whole number'),
    v.minValue(1, 'must be at least 1'),
    v.maxValue(max, `must be at most ${max}`),
  );

/** The paging attributes (`page`, `size`, `start`); a search body holds them too. */
export const PageSchema = v.object({
  page: v.optional(positiveInt(Number.MAX_SAFE_INTEGER)),
  size: v.optional(positiveInt(MAX_PAGE_SIZE)),
  start: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(200, 'is too long'))),
});

/** Validates paging parameters: offset mode when `page` is given, else cursor mode. */
export function parsePage(query: PageQuery): PageRequest {
  const result = v.safeParse(PageSchema, { page: query.page, size: query.size, start: query.start });
  if (!result.success) throw validationFromIssues(result.issues, { schema: PageSchema });
  const { page, size = DEFAULT_PAGE_SIZE, start } = result.output;
  if (page !== undefined) {
    if (start !== undefined) throw ValidationError.field('start', 'cannot be combined with page (choose cursor or offset paging)');
    return { mode: 'offset', size, page };
  }
  return start === undefined ? { mode: 'cursor', size } : { mode: 'cursor', size, start };
}

/** Shapes a store page into the response, mapping (and possibly dropping) items. */
export function toPaginated<S, T>(request: PageRequest, result: PageResult<S>, map: (item: S) => T | null): Paginated<T> {
  const data: T[] = [];
  for (const item of result.items) {
    const mapped = map(item);
    if (mapped !== null) data.push(mapped);
  }
  if (result.mode === 'offset') {
    const page = request.mode === 'offset' ? request.page : 1;
    return {
      pagination: {
        total_items: result.totalItems,
        page_number: page,
        page_size: request.size,
        total_pages: Math.ceil(result.totalItems / request.size),
      },
      data,
    };
  }
  return { pagination: result.next === null ? { page_size: request.size, next: null } : { page_size: request.size, next: result.next, after: result.next }, data };
}
