/**
 * The small JSONPath subset used by the `json` filter: `$`, `.key`, `['key']` / `["key"]` and `[index]`.
 * No wildcards, slices, filters or recursive descent: the filter selects exactly one value.
 */

/** One step of a parsed path: a property name or an array index. */
export type JsonPathSegment = string | number;

/** A path that is not in the supported subset. The message names the problem, never the data. */
export class JsonPathSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonPathSyntaxError';
  }
}

const IDENTIFIER = /^[A-Za-z_$][\w$-]*/;
const INDEX = /^\[(\d+)\]/;
const QUOTED = /^\[\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*\]/;
const MAX_PATH_LENGTH = 1024;

/**
 * Parses a path into its segments.
 * @example parseJsonPath("$.card['number']") // ['card', 'number']
 */
export function parseJsonPath(path: string): JsonPathSegment[] {
  if (path.length > MAX_PATH_LENGTH) throw new JsonPathSyntaxError(`path is longer than ${MAX_PATH_LENGTH} characters`);
  const trimmed = path.trim();
  if (!trimmed.startsWith('$')) throw new JsonPathSyntaxError("path must start with '$'");
  const segments: JsonPathSegment[] = [];
  let rest = trimmed.slice(1);
  while (rest.length > 0) {
    if (rest.startsWith('.')) {
      const match = IDENTIFIER.exec(rest.slice(1));
      if (!match) throw new JsonPathSyntaxError("expected a property name after '.'");
      segments.push(match[0]);
      rest = rest.slice(1 + match[0].length);
      continue;
    }
    const index = INDEX.exec(rest);
    if (index) {
      const n = Number(index[1]);
      if (!Number.isSafeInteger(n)) throw new JsonPathSyntaxError('array index is too large');
      segments.push(n);
      rest = rest.slice(index[0].length);
      continue;
    }
    const quoted = QUOTED.exec(rest);
    if (quoted) {
      segments.push(unescape(quoted[1] ?? quoted[2] ?? ''));
      rest = rest.slice(quoted[0].length);
      continue;
    }
    throw new JsonPathSyntaxError("unsupported path syntax (use $, .key, ['key'] or [index])");
  }
  return segments;
}

function unescape(text: string): string {
  return text.replace(/\\(.)/g, '$1');
}

/**
 * Selects one value. Only own properties of plain objects and elements of arrays are followed, so a
 * path can never reach a prototype (`$.constructor`) or an array's `length`. Missing → undefined.
 */
export function selectJsonPath(value: unknown, segments: readonly JsonPathSegment[]): unknown {
  let current = value;
  for (const segment of segments) {
    if (typeof segment === 'number') {
      if (!Array.isArray(current) || segment >= current.length) return undefined;
      current = current[segment];
    } else {
      if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
      if (!Object.hasOwn(current, segment)) return undefined;
      current = (current as Record<string, unknown>)[segment];
    }
  }
  return current;
}
