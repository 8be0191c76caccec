/** The escape character of patterns built here; use with `LIKE ? ESCAPE '\'`. */
export const LIKE_ESCAPE = '\\';

/**
 * A LIKE pattern for a case-insensitive substring search in which `*` matches any run of
 * characters. LIKE's own wildcards (`%`, `_`) and the escape character in the input are escaped, so
 * they only match themselves. The pattern is lower-cased in JS (Unicode-aware, unlike SQLite's
 * ASCII-only LIKE folding) and must be compared with a column lower-cased the same way.
 * @example likeSubstringPattern('Pay*100%') // '%pay%100\%%'
 */
export function likeSubstringPattern(search: string): string {
  const escaped = search
    .toLowerCase()
    .replace(/[\\%_]/g, (c) => LIKE_ESCAPE + c)
    .replace(/\*+/g, '%');
  return `%${escaped}%`;
}
