/**
 * Liquid-free shortcuts for the common templates: a plain variable (`{{ data.number }}`) and a
 * variable through vault filters with literal arguments (`{{ data.number | reveal_last: 4 }}`).
 * Whenever liquid's own semantics could differ, they return FALLBACK and liquid renders instead.
 */
import { Output, TypeGuards } from 'liquidjs';
import type { Template } from 'liquidjs';
import { renderError } from './expression-errors.js';
import type { FilterThis, VaultFilter } from './filter-values.js';
import { vaultFilters } from './filters.js';
import { MEMORY_LIMIT } from './liquid-instance.js';

/** Returned by the fast lookup when liquid's own semantics are needed. */
export const FALLBACK = Symbol('fallback');
/** Names liquid resolves specially (`size` of a string, `first` of an array): left to liquid. */
const SPECIAL_PROPERTIES = new Set(['size', 'first', 'last']);

export interface SingleVariable {
  output: Output;
  path: string[];
}

export interface VaultPipeline {
  path: string[];
  filters: { fn: VaultFilter; args: unknown[] }[];
}

/** Recognizes `{{ a.b['c'] }}`: one output, no filters, a variable (not a literal) as its value. */
export function singleVariable(templates: Template[]): SingleVariable | undefined {
  const [only] = templates;
  if (templates.length !== 1 || !(only instanceof Output)) return undefined;
  const value = only.value;
  if (value.filters.length !== 0) return undefined;
  const tokens = value.initial.postfix;
  const [token] = tokens;
  if (tokens.length !== 1 || !TypeGuards.isPropertyAccessToken(token) || token.variable !== undefined) return undefined;
  const path: string[] = [];
  for (const prop of token.props) {
    if (TypeGuards.isWordToken(prop) || TypeGuards.isQuotedToken(prop)) path.push(prop.content);
    else return { output: only, path: [] };
  }
  // An empty path never takes the fast lookup: liquid resolves the special names itself.
  return { output: only, path: path.some(isSpecial) ? [] : path };
}

/** Recognizes one output of a variable path through vault filters whose arguments are all literals. */
export function vaultPipeline(templates: Template[]): VaultPipeline | undefined {
  const [only] = templates;
  if (templates.length !== 1 || !(only instanceof Output) || only.value.filters.length === 0) return undefined;
  const tokens = only.value.initial.postfix;
  const [token] = tokens;
  if (tokens.length !== 1 || !TypeGuards.isPropertyAccessToken(token) || token.variable !== undefined) return undefined;
  const path: string[] = [];
  for (const prop of token.props) {
    if (!TypeGuards.isWordToken(prop) && !TypeGuards.isQuotedToken(prop)) return undefined;
    if (isSpecial(prop.content)) return undefined;
    path.push(prop.content);
  }
  const filters: { fn: VaultFilter; args: unknown[] }[] = [];
  for (const filter of only.value.filters) {
    const fn = Object.hasOwn(vaultFilters, filter.name) ? vaultFilters[filter.name] : undefined;
    if (fn === undefined) return undefined;
    const args: unknown[] = [];
    for (const arg of filter.args) {
      if (Array.isArray(arg)) return undefined;
      if (TypeGuards.isNumberToken(arg) || TypeGuards.isQuotedToken(arg)) args.push(arg.content);
      else return undefined;
    }
    filters.push({ fn, args });
  }
  return { path, filters };
}

/** Runs a pipeline; FALLBACK when liquid must decide (special lookups, or a result that is not text). */
export function runPipeline(pipeline: VaultPipeline, vars: Record<string, unknown>, field: string): string | typeof FALLBACK {
  let value = lookup(vars, pipeline.path);
  if (value === FALLBACK) return FALLBACK;
  const self: FilterThis = { context: { memoryLimit: new MemoryBudget() } };
  try {
    for (const { fn, args } of pipeline.filters) value = fn.call(self, value, ...args);
  } catch (error) {
    throw renderError(error, field);
  }
  return typeof value === 'string' ? value : FALLBACK;
}

/** The memory accounting liquid gives filters (same limit and message), for filters run without liquid. */
class MemoryBudget {
  #used = 0;
  use(count: number): void {
    this.#used += count;
    if (this.#used > MEMORY_LIMIT) throw new Error('memory alloc limit exceeded, line:1, col:1');
  }
}

/** A name liquid resolves on its own (`size`, `first`, `last`, prototype members): never looked up directly. */
function isSpecial(key: string): boolean {
  return SPECIAL_PROPERTIES.has(key) || key in Object.prototype;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Follows own properties of plain objects, as liquid does with `ownPropertyOnly`. Anything liquid
 * treats specially (arrays, strings, `size`/`first`/`last`, prototype names, functions) returns
 * FALLBACK so liquid decides, which keeps this shortcut's output identical to liquid's.
 */
export function lookup(vars: Record<string, unknown>, path: readonly string[]): unknown {
  if (path.length === 0) return FALLBACK;
  let current: unknown = vars;
  // No key of `path` is special (checked when compiled: see isSpecial).
  for (const key of path) {
    if (current === undefined || current === null) return current;
    if (typeof current !== 'object' || Array.isArray(current) || !isPlainObject(current)) return FALLBACK;
    current = Object.hasOwn(current, key) ? current[key] : undefined;
    if (typeof current === 'function') return FALLBACK;
  }
  return current;
}
