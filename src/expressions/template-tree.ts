/**
 * Trees whose string leaves are templates (masks): walking them, and the render plans of deeply
 * frozen ones (see ExpressionEngine.renderTree).
 */
import { ValidationError } from '../errors/errors.js';
import type { Compiled } from './compiled-template.js';

const MAX_TREE_DEPTH = 64;

/** A template leaf of a render plan: its parsed form and its path for error messages. */
export class PlanLeaf {
  constructor(
    readonly leaf: Compiled,
    readonly field: string,
  ) {}
}

/** The tree with each string leaf replaced by `leaf(template, path)`; paths such as `mask.number` or `mask[0]`. */
export function walkTree(tree: unknown, field: string, leaf: (template: string, field: string) => unknown, depth = 0): unknown {
  if (depth > MAX_TREE_DEPTH) throw ValidationError.field(field, `is nested deeper than ${MAX_TREE_DEPTH} levels`);
  if (typeof tree === 'string') return leaf(tree, field);
  if (Array.isArray(tree)) return tree.map((item, i) => walkTree(item, `${field}[${i}]`, leaf, depth + 1));
  if (tree !== null && typeof tree === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(tree)) {
      setOwn(out, key, walkTree((tree as Record<string, unknown>)[key], `${field}.${key}`, leaf, depth + 1));
    }
    return out;
  }
  return tree;
}

/** Renders a plan: what walkTree built from a tree with each template replaced by its PlanLeaf. */
export function renderPlan(plan: unknown, renderLeaf: (leaf: PlanLeaf) => unknown): unknown {
  if (Array.isArray(plan)) return plan.map((item) => renderPlan(item, renderLeaf));
  if (plan === null || typeof plan !== 'object') return plan;
  if (plan instanceof PlanLeaf) return renderLeaf(plan);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(plan)) {
    setOwn(out, key, renderPlan((plan as Record<string, unknown>)[key], renderLeaf));
  }
  return out;
}

/** `out[key] = value`, except that `__proto__` stays a plain key instead of replacing the prototype. */
function setOwn(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}
