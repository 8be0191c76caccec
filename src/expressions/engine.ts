/**
 * The expression engine: Liquid (liquidjs) plus the vault filters, with parsed templates cached.
 *
 * Expressions are written by API callers, so the liquid instance is locked down:
 * - `include`, `render` and `layout` are removed (parse error) and the file system refuses every read;
 * - templates are capped in length, renders in time and in liquid-counted memory;
 * - templates may only use straight-line tags and a bounded number of nodes and filters
 *   (template-limits.ts), so each render is cheap for any data;
 * - the renders of one service call share an ExpressionBudget (budget.ts), so a request that renders
 *   many templates cannot add the per-render caps up;
 * - unknown filters are parse errors (`strictFilters`); only own properties of the variables are
 *   visible (`ownPropertyOnly`), so `data.constructor` renders empty;
 * - no output escaping: expressions produce data, not HTML.
 *
 * Every failure becomes a ValidationError naming the field. Its message is built here from the kind of
 * failure, never from liquid's message, which can quote the template (that may hold an HMAC key).
 */
import { Context, Liquid, Output, TypeGuards, toValueSync } from 'liquidjs';
import type { FS, FilterImplOptions, Template } from 'liquidjs';
import { ValidationError } from '../errors.js';
import { isDeepFrozen } from '../frozen.js';
import { DEFAULT_REQUEST_BUDGET_MS, ExpressionBudget, type MonotonicNow, performanceNow } from './budget.js';
import { ExpressionFilterError, type FilterThis, type VaultFilter, vaultFilters } from './filters.js';
import { checkTemplateLimits } from './template-limits.js';

/** Options of {@link ExpressionEngine}. */
export interface ExpressionEngineOptions {
  /**
   * How many parsed templates are kept, least recently used dropped first (approximately: a
   * template in use outlives at least cacheSize / 2 newer ones). Default 1000.
   */
  cacheSize?: number;
  /** Expression time of one service call, in ms (see {@link ExpressionEngine.budget}). Default 250. */
  requestBudgetMs?: number;
  /** The monotonic time source budgets read. Default performance.now; tests inject one that moves when read. */
  now?: MonotonicNow;
}

/** Counters of the parsed-template cache, for tests and diagnostics. */
export interface ExpressionCacheStats {
  size: number;
  hits: number;
  misses: number;
}

/** Longest template accepted, in characters. Masks and fingerprints are a few dozen characters. */
export const MAX_TEMPLATE_LENGTH = 16_384;
/**
 * Wall-clock budget of one render, in ms (liquid checks it between template nodes). Templates have no
 * loops and at most 64 nodes (template-limits.ts), so an allowed render takes well under a
 * millisecond on ordinary data and a few on a megabyte of it: this is a backstop, for renders outside a
 * request budget too (reactor detokenization), and no lower so that a GC pause does not fail a render.
 */
export const RENDER_LIMIT_MS = 100;
/** Templates in one mask (its string leaves), checked when a mask is saved. */
export const MAX_MASK_TEMPLATES = 100;
/** Budget of liquid-counted allocations (ranges, array and string filters) per render. */
export const MEMORY_LIMIT = 2_000_000;
const MAX_TREE_DEPTH = 64;
const DISALLOWED_TAGS = ['include', 'render', 'layout'] as const;

function refuse(): never {
  throw new Error('file access is disabled in expressions');
}

/** A file system that refuses everything, so no tag (present or future) can read a file. */
const NO_FILES: FS = {
  exists: async () => false,
  existsSync: () => false,
  readFile: async () => refuse(),
  readFileSync: () => refuse(),
  resolve: () => refuse(),
  sep: '/',
  dirname: () => refuse(),
};

/**
 * A parsed template. `path` is set when the template is exactly one variable output without
 * filters (`{{ data.a.b }}`): the segments when they are all literal names, else an empty array.
 */
interface Compiled {
  templates: Template[];
  single: { output: Output; path: string[] } | undefined;
  /** `{{ data.a | vault_filter: 'literal', 4 | … }}`: evaluated without liquid when it yields text. */
  pipeline: { path: string[]; filters: { fn: VaultFilter; args: unknown[] }[] } | undefined;
  /** The cache tick of its last (re-)insertion. */
  stamp: number;
}

/** A template leaf of a render plan: its parsed form and its path for error messages. */
class PlanLeaf {
  constructor(
    readonly leaf: Compiled,
    readonly field: string,
  ) {}
}

/** Returned by the fast lookup when liquid's own semantics are needed. */
const FALLBACK = Symbol('fallback');
/** Names liquid resolves specially (`size` of a string, `first` of an array): left to liquid. */
const SPECIAL_PROPERTIES = new Set(['size', 'first', 'last']);

/**
 * Renders Liquid expressions with the vault filters.
 * @example
 * const engine = new ExpressionEngine();
 * engine.render('{{ data.number | reveal_last: 4 }}', { data: { number: '4242424242424242' } }, 'mask');
 * // 'XXXXXXXXXXXX4242'
 */
export class ExpressionEngine {
  readonly #liquid: Liquid;
  readonly #cache = new Map<string, Compiled>();
  /** Render plans of deeply frozen trees (see renderTree); weak, so a plan lives as long as its tree. */
  readonly #plans = new WeakMap<object, { field: string; plan: unknown }>();
  readonly #cacheSize: number;
  readonly #refreshAge: number;
  readonly #requestBudgetMs: number;
  readonly #now: MonotonicNow;
  /** Counts cache insertions and refreshes; an entry's `stamp` is the tick of its last one. */
  #tick = 0;
  #hits = 0;
  #misses = 0;

  constructor(options: ExpressionEngineOptions = {}) {
    const cacheSize = options.cacheSize ?? 1000;
    if (!Number.isSafeInteger(cacheSize) || cacheSize < 0) throw ValidationError.field('cacheSize', 'must be a non-negative integer');
    this.#cacheSize = cacheSize;
    const requestBudgetMs = options.requestBudgetMs ?? DEFAULT_REQUEST_BUDGET_MS;
    if (!Number.isSafeInteger(requestBudgetMs) || requestBudgetMs < 1) throw ValidationError.field('requestBudgetMs', 'must be a positive integer');
    this.#requestBudgetMs = requestBudgetMs;
    this.#now = options.now ?? performanceNow;
    this.#refreshAge = Math.max(1, Math.floor(cacheSize / 2));
    this.#liquid = new Liquid({
      fs: NO_FILES,
      root: [],
      partials: [],
      layouts: [],
      relativeReference: false,
      dynamicPartials: false,
      strictFilters: true,
      strictVariables: false,
      ownPropertyOnly: true,
      jsTruthy: false,
      outputEscape: undefined,
      keepOutputType: false,
      cache: false,
      parseLimit: MAX_TEMPLATE_LENGTH,
      renderLimit: RENDER_LIMIT_MS,
      memoryLimit: MEMORY_LIMIT,
    });
    for (const tag of DISALLOWED_TAGS) delete this.#liquid.tags[tag];
    for (const [name, filter] of Object.entries(vaultFilters)) {
      this.#liquid.registerFilter(name, filter as FilterImplOptions);
    }
  }

  /**
   * A fresh budget for the renders of one service call: pass it to every render of that call.
   * @example
   * const budget = engine.budget();
   * indexes.forEach((t, i) => engine.render(t, { data }, `search_indexes[${i}]`, budget));
   */
  budget(): ExpressionBudget {
    return new ExpressionBudget(this.#requestBudgetMs, this.#now);
  }

  /**
   * Parses (cached) and checks a template; throws ValidationError.field(field, message) if it does
   * not parse, uses an unknown filter, or goes beyond what expressions may contain (template-limits.ts).
   */
  compile(template: string, field: string): void {
    this.#compiled(template, field);
  }

  /**
   * Renders one template string with the variables (e.g. `{ data, metadata }`). Variables not given
   * render empty. Throws ValidationError.field(field, message) on any parse or render error, or when
   * the budget (optional: callers outside a request may render without one) has run out.
   */
  render(template: string, vars: Record<string, unknown>, field: string, budget?: ExpressionBudget): string {
    if (budget === undefined) return this.#renderText(this.#compiled(template, field), vars, field);
    // Parsing is charged too: a tokenize body can hold 10,000 distinct templates.
    return budget.run(field, () => this.#renderText(this.#compiled(template, field), vars, field));
  }

  #renderText(compiled: Compiled, vars: Record<string, unknown>, field: string): string {
    if (compiled.single !== undefined) {
      // The hot path (fingerprints like `{{ data.number }}`): a plain lookup, no liquid context.
      const value = lookup(vars, compiled.single.path);
      if (value !== FALLBACK) {
        if (typeof value === 'string') return value;
        if (value === undefined || value === null) return '';
        if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      }
    }
    if (compiled.pipeline !== undefined) {
      // Masks like `{{ data.number | reveal_last: 4 }}`: the vault filters called directly, as liquid
      // would call them. Only a text result is taken; anything else is rendered by liquid below.
      const text = runPipeline(compiled.pipeline, vars, field);
      if (text !== FALLBACK) return text;
    }
    try {
      // A shallow copy: `{% assign data = … %}` writes to the top-level scope, which must not be the caller's object.
      return this.#liquid.renderSync(compiled.templates, { ...vars }) as string;
    } catch (error) {
      throw renderError(error, field);
    }
  }

  /**
   * Renders a tree (object/array/primitive) whose string leaves are templates, e.g. a mask. Non-string
   * leaves are kept. A leaf that is exactly one variable output without filters (`{{ data.month }}`)
   * yields the variable's value with its JSON type (a missing variable yields null). Error fields are
   * paths such as `mask.number` or `mask[0]`.
   */
  renderTree(tree: unknown, vars: Record<string, unknown>, field: string, budget?: ExpressionBudget): unknown {
    // A deeply frozen tree (the stores share one parsed object per distinct mask) is planned once:
    // its templates and error paths resolved, so a render neither walks keys nor looks templates up.
    if (typeof tree === 'object' && tree !== null && Object.isFrozen(tree)) {
      let planned = this.#plans.get(tree);
      if (planned?.field !== field && isDeepFrozen(tree)) {
        planned = { field, plan: this.#walk(tree, field, 0, (template, path) => new PlanLeaf(this.#compiled(template, path), path)) };
        this.#plans.set(tree, planned);
      }
      if (planned !== undefined && planned.field === field) return this.#renderPlan(planned.plan, vars, budget);
    }
    return this.#walk(tree, field, 0, (template, path) => {
      if (budget === undefined) return this.#renderLeaf(this.#compiled(template, path), vars, path);
      return budget.run(path, () => this.#renderLeaf(this.#compiled(template, path), vars, path));
    });
  }

  /**
   * compile() every string leaf of a tree (for validating a mask when it is saved); at most
   * MAX_MASK_TEMPLATES leaves. Parsing is charged to the budget when one is given.
   */
  compileTree(tree: unknown, field: string, budget?: ExpressionBudget): void {
    let leaves = 0;
    this.#walk(tree, field, 0, (template, path) => {
      if (++leaves > MAX_MASK_TEMPLATES) throw ValidationError.field(field, `holds more than ${MAX_MASK_TEMPLATES} expressions`);
      if (budget === undefined) this.compile(template, path);
      else budget.run(path, () => this.compile(template, path));
      return template;
    });
  }

  /** Counters of the parsed-template cache. */
  cacheStats(): ExpressionCacheStats {
    return { size: this.#cache.size, hits: this.#hits, misses: this.#misses };
  }

  #renderLeaf(compiled: Compiled, vars: Record<string, unknown>, field: string): unknown {
    if (compiled.single === undefined) return this.#renderText(compiled, vars, field);
    let value = lookup(vars, compiled.single.path);
    if (value === FALLBACK) {
      try {
        const ctx = new Context({ ...vars }, this.#liquid.options, { sync: true }, { liquid: this.#liquid });
        value = toValueSync(compiled.single.output.value.value(ctx, false));
      } catch (error) {
        throw renderError(error, field);
      }
    }
    if (value === undefined || value === null) return null;
    // A copy, so the rendered tree never aliases the token's data.
    return typeof value === 'object' ? structuredClone(value) : value;
  }

  /** Renders a plan: what #walk built from a tree with each template replaced by its PlanLeaf (see renderTree). */
  #renderPlan(plan: unknown, vars: Record<string, unknown>, budget: ExpressionBudget | undefined): unknown {
    if (Array.isArray(plan)) return plan.map((item) => this.#renderPlan(item, vars, budget));
    if (plan === null || typeof plan !== 'object') return plan;
    if (plan instanceof PlanLeaf) {
      if (budget === undefined) return this.#renderLeaf(plan.leaf, vars, plan.field);
      return budget.run(plan.field, () => this.#renderLeaf(plan.leaf, vars, plan.field));
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(plan)) {
      setOwn(out, key, this.#renderPlan((plan as Record<string, unknown>)[key], vars, budget));
    }
    return out;
  }

  #walk(tree: unknown, field: string, depth: number, leaf: (template: string, field: string) => unknown): unknown {
    if (depth > MAX_TREE_DEPTH) throw ValidationError.field(field, `is nested deeper than ${MAX_TREE_DEPTH} levels`);
    if (typeof tree === 'string') return leaf(tree, field);
    if (Array.isArray(tree)) return tree.map((item, i) => this.#walk(item, `${field}[${i}]`, depth + 1, leaf));
    if (tree !== null && typeof tree === 'object') {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(tree)) {
        setOwn(out, key, this.#walk((tree as Record<string, unknown>)[key], `${field}.${key}`, depth + 1, leaf));
      }
      return out;
    }
    return tree;
  }

  #compiled(template: string, field: string): Compiled {
    if (typeof template !== 'string') throw ValidationError.field(field, 'must be a string expression');
    const cached = this.#cache.get(template);
    if (cached !== undefined) {
      this.#hits++;
      // Re-inserted (Map keeps insertion order) only once it has aged half the cache: a hot
      // template costs a lookup, not a delete and a set on every render, and a template in use
      // still outlives at least cacheSize / 2 newer ones.
      if (this.#tick - cached.stamp >= this.#refreshAge) {
        this.#cache.delete(template);
        this.#cache.set(template, cached);
        cached.stamp = ++this.#tick;
      }
      return cached;
    }
    this.#misses++;
    if (template.length > MAX_TEMPLATE_LENGTH) {
      throw ValidationError.field(field, `is longer than ${MAX_TEMPLATE_LENGTH} characters`);
    }
    let templates: Template[];
    try {
      templates = this.#liquid.parse(template);
    } catch (error) {
      throw parseError(error, field);
    }
    checkTemplateLimits(templates, field);
    const single = singleVariable(templates);
    const compiled: Compiled = { templates, single, pipeline: single === undefined ? vaultPipeline(templates) : undefined, stamp: ++this.#tick };
    if (this.#cacheSize > 0) {
      if (this.#cache.size >= this.#cacheSize) {
        const oldest = this.#cache.keys().next();
        if (oldest.done !== true) this.#cache.delete(oldest.value);
      }
      this.#cache.set(template, compiled);
    }
    return compiled;
  }
}

/** Recognizes `{{ a.b['c'] }}`: one output, no filters, a variable (not a literal) as its value. */
function singleVariable(templates: Template[]): Compiled['single'] {
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
function vaultPipeline(templates: Template[]): Compiled['pipeline'] {
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
function runPipeline(pipeline: NonNullable<Compiled['pipeline']>, vars: Record<string, unknown>, field: string): string | typeof FALLBACK {
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

/** `out[key] = value`, except that `__proto__` stays a plain key instead of replacing the prototype. */
function setOwn(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
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
function lookup(vars: Record<string, unknown>, path: readonly string[]): unknown {
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

function position(error: unknown): string {
  const token = (error as { token?: { getPosition?: () => [number, number] } } | null)?.token;
  if (typeof token?.getPosition !== 'function') return '';
  const [line, col] = token.getPosition();
  return ` (line ${line}, col ${col})`;
}

function parseError(error: unknown, field: string): ValidationError {
  const message = error instanceof Error ? error.message : '';
  const where = position(error);
  let match: RegExpExecArray | null;
  if ((match = /^undefined filter: ([\w-]+)/.exec(message))) {
    return ValidationError.field(field, `uses the unknown filter '${match[1]}'${where}`);
  }
  if ((match = /^tag "([\w-]+)" not found/.exec(message))) {
    const name = match[1] ?? '';
    const reason = (DISALLOWED_TAGS as readonly string[]).includes(name) ? 'is not allowed' : 'is unknown';
    return ValidationError.field(field, `uses the tag '${name}', which ${reason}${where}`);
  }
  if (message.startsWith('parse length limit exceeded')) {
    return ValidationError.field(field, `is longer than ${MAX_TEMPLATE_LENGTH} characters`);
  }
  if (/not closed/.test(message)) return ValidationError.field(field, `has an unclosed tag or output${where}`);
  return ValidationError.field(field, `is not a valid expression${where}`);
}

function renderError(error: unknown, field: string): ValidationError {
  // Liquid wraps a filter's error (RenderError.originalError), possibly more than once.
  let cause: unknown = error;
  for (let i = 0; i < 10 && cause instanceof Error; i++) {
    if (cause instanceof ExpressionFilterError) return ValidationError.field(field, cause.message);
    const message = cause.message;
    if (message.startsWith('template render limit exceeded')) {
      return ValidationError.field(field, `took longer than ${RENDER_LIMIT_MS} ms to render`);
    }
    if (message.startsWith('memory alloc limit exceeded')) {
      return ValidationError.field(field, 'used more memory than expressions are allowed');
    }
    cause = (cause as { originalError?: unknown }).originalError;
  }
  return ValidationError.field(field, `could not be rendered${position(error)}`);
}
