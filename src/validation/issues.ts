/**
 * Turning valibot issues into our ValidationError: one path style (`data.number`, `permissions[0]`,
 * `rules[0].permissions[1]`) and messages in our words. A schema's own message (`'must be a whole
 * number'`) is kept; valibot's default wording ("Invalid type: Expected string but received 5",
 * "Invalid key: Expected never but received \"x\"") never reaches a caller: it is rewritten from
 * the issue's kind here.
 */
import * as v from 'valibot';
import { type FieldErrors, ValidationError } from '../errors/errors.js';
import { addError } from './field-errors.js';

type Issue = v.BaseIssue<unknown>;
type AnySchema = v.GenericSchema | v.GenericSchemaAsync;

/** Where a parse happens: a prefix for its paths, the name of its root, and the schema (to list accepted fields). */
export interface IssueContext {
  /** Prepended to every path (`options`, `data`). */
  prefix?: string;
  /** The path reported for an issue on the value itself (default: the prefix, else `body`). */
  root?: string;
  /** The schema that was parsed: lets an unknown field's message list the accepted ones. */
  schema?: AnySchema;
}

/** Parses with the schema, or throws a ValidationError in our words. */
export function parseOrThrow<S extends v.GenericSchema>(schema: S, input: unknown, context: Omit<IssueContext, 'schema'> = {}): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (!result.success) throw validationFromIssues(result.issues, { ...context, schema });
  return result.output;
}

/** Converts valibot issues into a ValidationError keyed by field paths. */
export function validationFromIssues(issues: readonly Issue[], context: IssueContext | string = {}, root?: string): ValidationError {
  const ctx: IssueContext = typeof context === 'string' ? { prefix: context, ...(root === undefined ? {} : { root }) } : context;
  return new ValidationError(issuesToFieldErrors(issues, ctx));
}

/** Converts valibot issues into field errors (several messages per path are kept, in order). */
export function issuesToFieldErrors(issues: readonly Issue[], context: IssueContext | string = {}): FieldErrors {
  const ctx: IssueContext = typeof context === 'string' ? { prefix: context } : context;
  const prefix = ctx.prefix ?? '';
  const root = ctx.root ?? (prefix || 'body');
  const errors: FieldErrors = {};
  // addError, not `errors[path] ??= []`: a body key named `__proto__` or `constructor` would find
  // Object.prototype's member there (and fail as a 500) instead of a list of its own.
  for (const issue of issues) addError(errors, joinPath(prefix, issue.path ?? []) || root, messageOf(issue, ctx.schema));
  return errors;
}

/** `prefix` then each key: `.key` for object keys, `[i]` for array indexes. */
export function joinPath(prefix: string, items: readonly { type: string; key: unknown }[]): string {
  let path = prefix;
  for (const item of items) {
    if (item.type === 'array' || (typeof item.key === 'number' && item.type !== 'object')) path += `[${String(item.key)}]`;
    else path += path === '' ? String(item.key) : `.${String(item.key)}`;
  }
  return path;
}

/** valibot's default message: "Invalid <label>: Expected … but received …" or "Invalid <label>: Received …". */
const DEFAULT_WORDING = /^Invalid [\w ]+: (?:Expected [\s\S]* but r|R)eceived /;

/** The issue's message in our words: the schema's own message when it set one, else one from the kind. */
export function messageOf(issue: Issue, schema?: AnySchema): string {
  const path = issue.path ?? [];
  // A missing key is reported by its object (whatever message the object schema carries).
  if (issue.input === undefined && path.length > 0 && issue.type.endsWith('object') && issue.expected !== 'never') return 'is required';
  if (!DEFAULT_WORDING.test(issue.message)) return issue.message;
  if (issue.kind === 'schema' && issue.input === undefined && path.length > 0) return 'is required';
  switch (issue.type) {
    case 'strict_object':
    case 'strict_tuple': {
      if (issue.expected !== 'never') return issue.type === 'strict_tuple' ? 'must be an array' : 'must be a JSON object';
      // An unknown key: valibot reports it with the key as its last path item and "never" expected.
      const accepted = schema === undefined ? [] : acceptedKeys(schema, path.slice(0, -1));
      return accepted.length > 0 ? `is not an accepted field (accepted: ${accepted.join(', ')})` : 'is not an accepted field';
    }
    case 'string':
      return 'must be a string';
    case 'number':
      return 'must be a number';
    case 'boolean':
      return 'must be true or false';
    case 'object':
    case 'loose_object':
    case 'record':
      return 'must be a JSON object';
    case 'array':
    case 'tuple':
    case 'loose_tuple':
      return 'must be an array';
    case 'null':
      return 'must be null';
    case 'picklist':
    case 'enum':
    case 'literal':
      return `must be one of ${alternatives(issue.expected)}`;
    case 'union':
    case 'variant':
      return `must be ${alternatives(issue.expected, 'or')}`;
    case 'integer':
    case 'safe_integer':
      return 'must be a whole number';
    case 'finite':
      return 'must be a finite number';
    case 'min_length':
    case 'non_empty':
      return `must have at least ${issue.requirement === undefined ? 1 : String(issue.requirement)} ${unit(issue.input)}`;
    case 'max_length':
      return `must have at most ${String(issue.requirement)} ${unit(issue.input)}`;
    case 'length':
      return `must have exactly ${String(issue.requirement)} ${unit(issue.input)}`;
    case 'min_value':
      return `must be at least ${String(issue.requirement)}`;
    case 'max_value':
      return `must be at most ${String(issue.requirement)}`;
    case 'uuid':
      return 'must be a UUID';
    case 'url':
      return 'must be a URL';
    case 'regex':
      return 'has the wrong format';
    default:
      return 'is invalid';
  }
}

/** `'"a" | "b"'` → `a, b` (or `a or b`); names of types stay as they are (`number or string`). */
function alternatives(expected: string | null, joiner = ','): string {
  const parts = (expected ?? '')
    .replace(/^\((.*)\)$/s, '$1')
    .split(' | ')
    .map((p) => p.replace(/^"(.*)"$/, '$1'))
    .filter((p) => p !== '');
  if (parts.length === 0) return 'an accepted value';
  if (joiner === 'or') return parts.map((p) => (/^[a-z]+$/.test(p) && p !== 'null' ? article(p) : p)).join(' or ');
  return parts.join(', ');
}

function article(type: string): string {
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
}

function unit(input: unknown): string {
  return Array.isArray(input) ? 'items' : 'characters';
}

/** The keys the object schema at this path accepts (through pipes, optionals, arrays and unions). */
function acceptedKeys(schema: AnySchema, path: readonly { key: unknown }[]): string[] {
  let nodes: unknown[] = [schema];
  for (const item of path) nodes = nodes.flatMap((node) => children(unwrap(node), item.key));
  const keys = new Set<string>();
  for (const node of nodes.map(unwrap)) {
    const entries = (node as { entries?: unknown }).entries;
    if (typeof entries === 'object' && entries !== null) for (const key of Object.keys(entries)) keys.add(key);
  }
  return [...keys];
}

function unwrap(node: unknown): unknown {
  let current = node as { wrapped?: unknown; options?: unknown[] } | undefined;
  while (current && typeof current === 'object' && 'wrapped' in current && current.wrapped !== undefined) current = current.wrapped as typeof current;
  return current;
}

function children(node: unknown, key: unknown): unknown[] {
  if (node === null || typeof node !== 'object') return [];
  const n = node as { entries?: Record<string, unknown>; item?: unknown; options?: unknown[]; type?: string };
  if (n.options && Array.isArray(n.options)) return n.options.flatMap((o) => children(unwrap(o), key));
  if (n.entries && typeof key === 'string' && Object.hasOwn(n.entries, key)) return [n.entries[key]];
  if (n.item !== undefined) return [n.item];
  return [];
}
