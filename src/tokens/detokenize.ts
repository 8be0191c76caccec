/**
 * Detokenization of reactor args (docs/reactors.md): any string value, at any depth, may
 * hold `{{ <token_id> }}` or `{{ <token_id> | <filters> }}` expressions.
 *
 * - A string that is exactly one expression without filters becomes the token's data with its JSON
 *   type (an object for card, bank and other complex tokens).
 * - An expression with filters renders through the vault's ExpressionEngine (`data` is the token's
 *   data), so it yields text: Liquid output is text.
 * - Mixed with other text, each expression is stringified into it: strings as they are, numbers and
 *   booleans in their JSON form, objects and arrays as JSON, null as nothing.
 *
 * Parsing happens once into a plan (the args with every expression string replaced by a Template),
 * so the ids can be authorized and fetched together before anything is substituted.
 */
import { ValidationError } from '../errors/errors.js';
import type { ExpressionBudget } from '../expressions/budget.js';
import type { ExpressionEngine } from '../expressions/engine.js';

/** At most this many distinct tokens per invocation (docs/reactors.md). */
export const MAX_DETOKENIZED_TOKENS = 100;
/** Deepest nesting of arrays and objects accepted in args. */
export const MAX_ARGS_DEPTH = 64;

interface Expression {
  id: string;
  /** The text after the first `|`, or null when there is no filter. */
  filters: string | null;
}

/** A string of args holding at least one expression, parsed. */
class Template {
  readonly pieces: readonly (string | Expression)[];
  readonly field: string;
  constructor(pieces: (string | Expression)[], field: string) {
    this.pieces = pieces;
    this.field = field;
  }
}

/** Parsed args: the token ids they name (first field of each, for error messages) and the plan. */
export interface DetokenizePlan {
  /** Distinct ids in order of first appearance, each with the first field that names it. */
  readonly ids: ReadonlyMap<string, string>;
  readonly tree: unknown;
}

/**
 * Parses args (or any JSON; `root` names it in field paths), finding every expression. Throws
 * ValidationError for a malformed expression (naming the field), a value nested too deep, or more
 * than {@link MAX_DETOKENIZED_TOKENS} distinct tokens.
 */
export function planDetokenize(args: unknown, root = 'args'): DetokenizePlan {
  const ids = new Map<string, string>();
  const tree = walk(args, root, 0, (text, field) => {
    if (!text.includes('{{')) return text;
    const pieces = parseTemplate(text, field);
    for (const piece of pieces) if (typeof piece !== 'string' && !ids.has(piece.id)) ids.set(piece.id, field);
    return new Template(pieces, field);
  });
  if (ids.size > MAX_DETOKENIZED_TOKENS) {
    throw ValidationError.field(root, `detokenizes ${ids.size} distinct tokens; at most ${MAX_DETOKENIZED_TOKENS} are allowed per ${root === 'args' ? 'invocation' : 'request'}`);
  }
  return { ids, tree };
}

/**
 * Substitutes every expression with the token data in `data` (by id; every id of the plan must be
 * there). Returns fresh values: nothing aliases the plan or the data.
 */
export function applyDetokenize(plan: DetokenizePlan, data: ReadonlyMap<string, unknown>, engine: ExpressionEngine): unknown {
  // One budget for every filtered expression of the call: args may hold thousands of them.
  const budget = engine.budget();
  return rebuild(plan.tree, (template) => substitute(template, data, engine, budget));
}

function substitute(template: Template, data: ReadonlyMap<string, unknown>, engine: ExpressionEngine, budget: ExpressionBudget): unknown {
  const { pieces, field } = template;
  const only = pieces.length === 1 ? pieces[0] : undefined;
  if (only !== undefined && typeof only !== 'string' && only.filters === null) {
    const value = data.get(only.id);
    return value === undefined ? null : structuredClone(value);
  }
  let out = '';
  for (const piece of pieces) {
    if (typeof piece === 'string') out += piece;
    else if (piece.filters === null) out += stringify(data.get(piece.id));
    else out += engine.render(`{{ data | ${piece.filters} }}`, { data: data.get(piece.id) ?? null }, field, budget);
  }
  return out;
}

function stringify(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/**
 * Splits a string into text and expressions. `}}` inside a quoted filter argument does not end the
 * expression. The id is the first run of characters other than whitespace, `|` and `}`.
 */
function parseTemplate(text: string, field: string): (string | Expression)[] {
  const pieces: (string | Expression)[] = [];
  let at = 0;
  for (;;) {
    const open = text.indexOf('{{', at);
    if (open === -1) break;
    if (open > at) pieces.push(text.slice(at, open));
    const close = findClose(text, open + 2);
    if (close === -1) throw ValidationError.field(field, "has a '{{' without its closing '}}'");
    pieces.push(parseExpression(text.slice(open + 2, close), field));
    at = close + 2;
  }
  if (at < text.length) pieces.push(text.slice(at));
  return pieces;
}

function findClose(text: string, from: number): number {
  let quote: string | null = null;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (quote !== null) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '}' && text[i + 1] === '}') return i;
  }
  return -1;
}

const EXPRESSION = /^\s*([^\s|}]+)\s*(?:\|(.*))?$/su;

function parseExpression(inner: string, field: string): Expression {
  const match = EXPRESSION.exec(inner);
  if (!match) throw ValidationError.field(field, "has an expression without a token id (expected '{{ <token_id> }}' or '{{ <token_id> | <filter> }}')");
  const filters = match[2]?.trim();
  if (filters === '') throw ValidationError.field(field, "has an expression with an empty filter after '|'");
  return { id: match[1]!, filters: filters ?? null };
}

/** Copies a JSON tree, mapping string leaves. Object keys are defined (a `__proto__` key stays a key). */
function walk(value: unknown, field: string, depth: number, leaf: (text: string, field: string) => unknown): unknown {
  if (depth > MAX_ARGS_DEPTH) throw ValidationError.field(field, `is nested deeper than ${MAX_ARGS_DEPTH} levels`);
  if (typeof value === 'string') return leaf(value, field);
  if (Array.isArray(value)) return value.map((item, i) => walk(item, `${field}[${i}]`, depth + 1, leaf));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walk(item, `${field}.${key}`, depth + 1, leaf)]));
  }
  if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') throw ValidationError.field(field, 'must be a JSON value');
  if (typeof value === 'number' && !Number.isFinite(value)) throw ValidationError.field(field, 'must be a finite number');
  return value;
}

function rebuild(value: unknown, template: (t: Template) => unknown): unknown {
  if (value instanceof Template) return template(value);
  if (Array.isArray(value)) return value.map((item) => rebuild(item, template));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, rebuild(item, template)]));
  }
  return value;
}
