/**
 * The expression engine: Liquid (liquidjs) plus the vault filters, with parsed templates cached.
 *
 * Expressions are written by API callers, so the liquid instance is locked down (liquid-instance.ts):
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
 * Every failure becomes a ValidationError naming the field, with a message that never quotes the
 * template (expression-errors.ts).
 */
import { Context, type Liquid, toValueSync } from 'liquidjs';
import { ValidationError } from '../errors/errors.js';
import { isDeepFrozen } from '../common/frozen.js';
import { DEFAULT_REQUEST_BUDGET_MS, ExpressionBudget, type MonotonicNow, performanceNow } from './budget.js';
import { type Compiled, compileTemplate } from './compiled-template.js';
import { renderError } from './expression-errors.js';
import { FALLBACK, lookup, runPipeline } from './fast-paths.js';
import { createLiquid } from './liquid-instance.js';
import { type ExpressionCacheStats, TemplateCache } from './template-cache.js';
import { PlanLeaf, renderPlan, walkTree } from './template-tree.js';

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

/** Templates in one mask (its string leaves), checked when a mask is saved. */
export const MAX_MASK_TEMPLATES = 100;

/**
 * Renders Liquid expressions with the vault filters.
 * @example
 * const engine = new ExpressionEngine();
 * engine.render('{{ data.number | reveal_last: 4 }}', { data: { number: '4242424242424242' } }, 'mask');
 * // 'XXXXXXXXXXXX4242'
 */
export class ExpressionEngine {
  readonly #liquid: Liquid;
  readonly #cache: TemplateCache<Compiled>;
  /** Render plans of deeply frozen trees (see renderTree); weak, so a plan lives as long as its tree. */
  readonly #plans = new WeakMap<object, { field: string; plan: unknown }>();
  readonly #requestBudgetMs: number;
  readonly #now: MonotonicNow;

  constructor(options: ExpressionEngineOptions = {}) {
    const cacheSize = options.cacheSize ?? 1000;
    if (!Number.isSafeInteger(cacheSize) || cacheSize < 0) throw ValidationError.field('cacheSize', 'must be a non-negative integer');
    this.#cache = new TemplateCache(cacheSize);
    const requestBudgetMs = options.requestBudgetMs ?? DEFAULT_REQUEST_BUDGET_MS;
    if (!Number.isSafeInteger(requestBudgetMs) || requestBudgetMs < 1) throw ValidationError.field('requestBudgetMs', 'must be a positive integer');
    this.#requestBudgetMs = requestBudgetMs;
    this.#now = options.now ?? performanceNow;
    this.#liquid = createLiquid();
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
        planned = { field, plan: walkTree(tree, field, (template, path) => new PlanLeaf(this.#compiled(template, path), path)) };
        this.#plans.set(tree, planned);
      }
      if (planned !== undefined && planned.field === field) {
        return renderPlan(planned.plan, (leaf) => {
          if (budget === undefined) return this.#renderLeaf(leaf.leaf, vars, leaf.field);
          return budget.run(leaf.field, () => this.#renderLeaf(leaf.leaf, vars, leaf.field));
        });
      }
    }
    return walkTree(tree, field, (template, path) => {
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
    walkTree(tree, field, (template, path) => {
      if (++leaves > MAX_MASK_TEMPLATES) throw ValidationError.field(field, `holds more than ${MAX_MASK_TEMPLATES} expressions`);
      if (budget === undefined) this.compile(template, path);
      else budget.run(path, () => this.compile(template, path));
      return template;
    });
  }

  /** Counters of the parsed-template cache. */
  cacheStats(): ExpressionCacheStats {
    return this.#cache.stats();
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

  #compiled(template: string, field: string): Compiled {
    if (typeof template !== 'string') throw ValidationError.field(field, 'must be a string expression');
    const cached = this.#cache.get(template);
    if (cached !== undefined) return cached;
    const compiled = compileTemplate(this.#liquid, template, field);
    this.#cache.set(template, compiled);
    return compiled;
  }
}
