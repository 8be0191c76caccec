/** Filters that convert a value: to JSON text (or a part of it by JSONPath), a number, text or a boolean. */
import { ExpressionFilterError, type FilterThis, HmacDigest, MAX_NUMBER_TEXT, charged, countArg, textOf } from './filter-values.js';
import { JsonPathSyntaxError, parseJsonPath, selectJsonPath } from './json-path.js';

export function stringify(self: FilterThis, filter: string, value: unknown, space?: number): string {
  // Text is charged before too: escaping is the slow part, per character (docs/performance.md,
  // "Figures behind the code's choices"), and a chain of stringify filters then stops before
  // writing the largest string rather than after.
  if (typeof value === 'string') self.context.memoryLimit.use(value.length);
  let text: string;
  try {
    text = JSON.stringify(value === undefined ? null : value, null, space) ?? 'null';
  } catch {
    throw new ExpressionFilterError(`${filter}: the value cannot be written as JSON`);
  }
  return charged(self, text);
}

export function jsonFilter(this: FilterThis, value: unknown, arg?: unknown): unknown {
  // Liquid's own `json` takes an indent; keep that form working and add the JSONPath form.
  if (arg === undefined) return stringify(this, 'json', value);
  if (typeof arg === 'number') return stringify(this, 'json', value, countArg('json', 'indent', arg));
  if (typeof arg !== 'string') throw new ExpressionFilterError("json: the argument must be a JSONPath such as '$.a.b'");
  try {
    return selectJsonPath(value, parseJsonPath(arg));
  } catch (error) {
    if (error instanceof JsonPathSyntaxError) throw new ExpressionFilterError(`json: ${error.message}`);
    throw error;
  }
}

// `\d+(?:\.\d*)?` rather than `\d+\.?\d*`, which could split a run of digits every way (quadratic).
const NUMERIC = /^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$/;

export function toNumber(this: FilterThis, value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.length <= MAX_NUMBER_TEXT && NUMERIC.test(value)) {
    const n = Number(value);
    if (Number.isFinite(n)) return n;
  }
  throw new ExpressionFilterError('to_number expects a number or numeric text');
}

export function toStringFilter(this: FilterThis, value: unknown): string {
  if (value !== null && typeof value === 'object' && !(value instanceof HmacDigest)) return stringify(this, 'to_string', value);
  return charged(this, textOf('to_string', value));
}

export function toBoolean(this: FilterThis, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    const text = value.trim().toLowerCase();
    if (text === 'true') return true;
    if (text === 'false') return false;
  }
  throw new ExpressionFilterError("to_boolean expects true, false, 'true' or 'false'");
}
