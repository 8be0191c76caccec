/**
 * The small path language of proxy transforms (docs/proxies.md, Transforms): `$.card.number`,
 * `$.items[0]`, `$['a b']` (and `args.card.number` inside a tokenize template, where `args` is the
 * body). Only plain member and index steps: no wildcards, filters or recursion, so a path names one
 * place, which a transform can read, replace, add or remove.
 */
import { ValidationError } from '../errors/errors.js';

export type PathStep = string | number;

const STEP = /^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^'\\]*)'\])/;

/** The steps of a path rooted at `root` (`$` or `args`); ValidationError naming `field` otherwise. */
export function parsePath(path: string, root: '$' | 'args', field: string): PathStep[] {
  let rest = path.trim();
  if (!rest.startsWith(root)) throw ValidationError.field(field, `'${path}' must start with '${root}'`);
  rest = rest.slice(root.length);
  const steps: PathStep[] = [];
  while (rest !== '') {
    const m = STEP.exec(rest);
    if (m === null) throw ValidationError.field(field, `'${path}' is not a path of .names, [indexes] or ['quoted names']`);
    steps.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : m[3]!));
    rest = rest.slice(m[0].length);
  }
  return steps;
}

/** The value at the steps; undefined when absent. */
export function getAt(value: unknown, steps: readonly PathStep[]): unknown {
  let at = value;
  for (const step of steps) {
    if (at === null || typeof at !== 'object' || !Object.hasOwn(at, step)) return undefined;
    at = (at as Record<string | number, unknown>)[step];
  }
  return at;
}

/** Sets the value at the steps, making objects on the way; false when a step crosses a non-object. */
export function setAt(root: unknown, steps: readonly PathStep[], value: unknown): boolean {
  if (steps.length === 0) return false;
  let at = root;
  for (let i = 0; i < steps.length - 1; i++) {
    if (at === null || typeof at !== 'object') return false;
    const container = at as Record<string | number, unknown>;
    const step = steps[i]!;
    if (!Object.hasOwn(container, step) || container[step] === null || typeof container[step] !== 'object') {
      if (isProtoName(step)) return false;
      container[step] = {};
    }
    at = container[step];
  }
  const last = steps[steps.length - 1]!;
  if (at === null || typeof at !== 'object' || isProtoName(last)) return false;
  (at as Record<string | number, unknown>)[last] = value;
  return true;
}

/** Removes the value at the steps (an array item is spliced out). */
export function deleteAt(root: unknown, steps: readonly PathStep[]): void {
  const parent = getAt(root, steps.slice(0, -1));
  const last = steps[steps.length - 1];
  if (last === undefined || parent === null || typeof parent !== 'object') return;
  if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
  else delete (parent as Record<string | number, unknown>)[last];
}

/** `__proto__` and friends are never written: a body must not reach Object.prototype. */
function isProtoName(step: PathStep): boolean {
  return step === '__proto__' || step === 'constructor' || step === 'prototype';
}
