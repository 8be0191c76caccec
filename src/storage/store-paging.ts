/** Cursor mode (default): `start` is an opaque cursor from a previous page's `next`. */
export interface CursorPage {
  mode: 'cursor';
  size: number;
  start?: string;
}

/** Offset mode: 1-based `page`. */
export interface OffsetPage {
  mode: 'offset';
  size: number;
  page: number;
}

export type PageRequest = CursorPage | OffsetPage;

export type PageResult<T> = { mode: 'cursor'; items: T[]; next: string | null } | { mode: 'offset'; items: T[]; totalItems: number };
