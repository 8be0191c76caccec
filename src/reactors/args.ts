/**
 * Validation of detokenized args against a formula's request_parameters (docs/reactors.md).
 *
 * - No declared parameters: any args are accepted as they are (rule 2).
 * - A declared name is a dot path (`parent.child`) into nested objects, matched case-sensitively (rule 3).
 * - A required parameter (optional false) that is missing or null is a 400 naming it (rule 4).
 * - A present value is cast to the declared type first, else it is a 400 naming it (rule 5):
 *   string ← number or boolean; number ← a numeric string; boolean ← "true" / "false";
 *   object / array ← a string holding JSON of that kind.
 * - Args that are not declared are passed through to the reactor unvalidated (rule 10, decided).
 *
 * Runs after detokenization, so one complex token can supply several parameters (rule 8).
 */
import { ValidationError } from '../errors/errors.js';
import type { DeclaredType, FormulaRecord } from '../storage/store.js';

type Parameter = FormulaRecord['requestParameters'][number];

const NUMERIC = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/u;

/**
 * Validates and casts `args` in place (they are the fresh copy detokenization made); returns the args
 * to hand to the reactor. `args` absent or null means `{}`. Throws ValidationError listing every failing parameter
 * as `args.<name>`.
 */
export function validateArgs(args: unknown, parameters: readonly Parameter[]): Record<string, unknown> {
  if (args === undefined || args === null) args = {};
  if (typeof args !== 'object' || Array.isArray(args)) throw ValidationError.field('args', 'must be an object');
  const out = args as Record<string, unknown>;
  if (parameters.length === 0) return out;
  const errors: Record<string, string[]> = {};
  // Parents before children: a parent cast from a JSON string must happen before its children are read.
  const ordered = [...parameters].sort((a, b) => depth(a.name) - depth(b.name));
  for (const parameter of ordered) {
    const field = `args.${parameter.name}`;
    const path = parameter.name.split('.');
    const { parent, key, blocked } = locate(out, path);
    if (blocked !== null) {
      // A parent on the path is present but not an object: the child cannot be there.
      if (!parameter.optional) errors[field] = [`is required (found '${blocked}' is not an object)`];
      continue;
    }
    const value = parent === null ? undefined : Object.hasOwn(parent, key) ? parent[key] : undefined;
    if (value === undefined || value === null) {
      if (!parameter.optional) errors[field] = ['is required'];
      continue;
    }
    const cast = castTo(value, parameter.type);
    if (cast === IMPOSSIBLE) {
      errors[field] = [`must be ${article(parameter.type)} (got ${describe(value)})`];
      continue;
    }
    Object.defineProperty(parent!, key, { value: cast, enumerable: true, writable: true, configurable: true });
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  return out;
}

function depth(name: string): number {
  return name.split('.').length;
}

/**
 * Finds the object holding the last segment of `path`. `parent` is null when an ancestor is missing;
 * `blocked` names the first ancestor that is present but not an object.
 */
function locate(root: Record<string, unknown>, path: string[]): { parent: Record<string, unknown> | null; key: string; blocked: string | null } {
  let current: Record<string, unknown> = root;
  for (let i = 0; i < path.length - 1; i++) {
    const segment = path[i]!;
    const next = Object.hasOwn(current, segment) ? current[segment] : undefined;
    if (next === undefined || next === null) return { parent: null, key: path.at(-1)!, blocked: null };
    if (typeof next !== 'object' || Array.isArray(next)) return { parent: null, key: path.at(-1)!, blocked: path.slice(0, i + 1).join('.') };
    current = next as Record<string, unknown>;
  }
  return { parent: current, key: path.at(-1)!, blocked: null };
}

const IMPOSSIBLE = Symbol('impossible');

/** Casts a value to a declared type, or returns IMPOSSIBLE. */
function castTo(value: unknown, type: DeclaredType): unknown {
  switch (type) {
    case 'string':
      if (typeof value === 'string') return value;
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      return IMPOSSIBLE;
    case 'number':
      if (typeof value === 'number') return Number.isFinite(value) ? value : IMPOSSIBLE;
      if (typeof value === 'string' && NUMERIC.test(value)) {
        const number = Number(value);
        return Number.isFinite(number) ? number : IMPOSSIBLE;
      }
      return IMPOSSIBLE;
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true') return true;
      if (value === 'false') return false;
      return IMPOSSIBLE;
    case 'object':
      if (isObject(value)) return value;
      if (typeof value === 'string') {
        const parsed = parseJson(value);
        return isObject(parsed) ? parsed : IMPOSSIBLE;
      }
      return IMPOSSIBLE;
    case 'array':
      if (Array.isArray(value)) return value;
      if (typeof value === 'string') {
        const parsed = parseJson(value);
        return Array.isArray(parsed) ? parsed : IMPOSSIBLE;
      }
      return IMPOSSIBLE;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}

function article(type: DeclaredType): string {
  return type === 'object' || type === 'array' ? `an ${type}` : `a ${type}`;
}

/** The kind of a value, never the value itself (it may be detokenized data). */
function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return 'a string that cannot be cast';
  return `a ${typeof value}`;
}
