/**
 * What an expression may contain: checked on every parsed template, so a mask,
 * id, fingerprint or search index that passes is cheap to render for any data.
 *
 * - Only straight-line tags: `if`, `unless`, `case`, `assign`, `echo`, `raw` and comments. No loop or
 *   repeating tag (`for`, `tablerow`, `cycle`), and nothing that only matters with loops (`capture`,
 *   `increment`, `decrement`, `break`, `continue`) or hides tags (`liquid`). So every node of a
 *   template runs at most once per render.
 * - At most MAX_TEMPLATE_NODES tags and outputs, and MAX_TEMPLATE_FILTERS filters, per template.
 * - No ranges (`(1..n)`): without loops their only use is building large arrays.
 * - No filters that parse and evaluate an expression per array item (`where_exp` and the other
 *   `*_exp` filters), nor sorting (the one filter whose work grows faster than its input).
 * - The width of `pad_left` / `pad_right` is a number written in the template, at most
 *   MAX_PAD_WIDTH: a width read from the data could not be checked before the render.
 *
 * What is left grows at most linearly in the data, and every filter that builds text or arrays
 * charges the per-render memory limit (liquid's own filters, and the vault filters: see `charged`
 * in filter-values.ts).
 */
import { Output, Tag, TypeGuards, Value } from 'liquidjs';
import type { Template } from 'liquidjs';
import { ValidationError } from '../errors/errors.js';
import { MAX_PAD_WIDTH } from './mask-filters.js';

/** Tags and outputs per template. A card mask leaf has one. */
export const MAX_TEMPLATE_NODES = 64;
/** Filters per template, over all its outputs and tags. */
export const MAX_TEMPLATE_FILTERS = 32;

const ALLOWED_TAGS: ReadonlySet<string> = new Set(['if', 'unless', 'case', 'assign', 'echo', 'raw', 'comment', '#']);
const REFUSED_FILTERS: ReadonlySet<string> = new Set(['sort', 'sort_natural', 'where_exp', 'reject_exp', 'group_by_exp', 'has_exp', 'find_exp', 'find_index_exp']);
const PAD_FILTERS: ReadonlySet<string> = new Set(['pad_left', 'pad_right']);

/** Counters of one template's walk. */
interface Tally {
  nodes: number;
  filters: number;
}

/** Throws ValidationError.field(field, …) when a parsed template uses something expressions may not. */
export function checkTemplateLimits(templates: readonly Template[], field: string): void {
  const tally: Tally = { nodes: 0, filters: 0 };
  walk(templates, field, tally);
}

function walk(templates: readonly Template[], field: string, tally: Tally): void {
  for (const template of templates) {
    if (template instanceof Output) {
      count(tally, field, 1, 0);
      checkValue(template.value, field, tally);
    } else if (template instanceof Tag) {
      if (!ALLOWED_TAGS.has(template.name)) {
        throw ValidationError.field(field, `uses the tag '${template.name}'; expressions may only use if, unless, case, assign, echo, raw and comments`);
      }
      count(tally, field, 1, 0);
      for (const argument of (template as Template).arguments?.() ?? []) {
        if (argument instanceof Value) checkValue(argument, field, tally);
        else if (TypeGuards.isRangeToken(argument)) refuseRange(field);
      }
      walk(childrenOf(template), field, tally);
    }
    // Anything else is literal text: written as is.
  }
}

/** The templates nested in a tag (the branches of if/unless/case). The allowed tags compute them without yielding. */
function childrenOf(tag: Tag & Template): Template[] {
  const generator = tag.children?.(false, true);
  if (generator === undefined) return [];
  let step = generator.next();
  while (!step.done) step = generator.next();
  return step.value;
}

function checkValue(value: Value, field: string, tally: Tally): void {
  for (const token of value.initial.postfix) if (TypeGuards.isRangeToken(token)) refuseRange(field);
  count(tally, field, 0, value.filters.length);
  for (const filter of value.filters) {
    if (REFUSED_FILTERS.has(filter.name)) {
      throw ValidationError.field(field, `uses the filter '${filter.name}', which expressions may not use`);
    }
    for (const arg of filter.args) {
      const token = Array.isArray(arg) ? arg[1] : arg;
      if (TypeGuards.isRangeToken(token)) refuseRange(field);
    }
    if (PAD_FILTERS.has(filter.name)) checkPadWidth(filter.name, filter.args[0], field);
  }
}

function checkPadWidth(name: string, arg: unknown, field: string): void {
  const width = !Array.isArray(arg) && TypeGuards.isNumberToken(arg) ? Number(arg.content) : Number.NaN;
  if (!Number.isSafeInteger(width) || width < 0 || width > MAX_PAD_WIDTH) {
    throw ValidationError.field(field, `${name}: width must be a whole number from 0 to ${MAX_PAD_WIDTH} written in the expression`);
  }
}

function refuseRange(field: string): never {
  throw ValidationError.field(field, 'uses a range such as (1..n), which expressions may not use');
}

function count(tally: Tally, field: string, nodes: number, filters: number): void {
  tally.nodes += nodes;
  tally.filters += filters;
  if (tally.nodes > MAX_TEMPLATE_NODES) throw ValidationError.field(field, `has more than ${MAX_TEMPLATE_NODES} tags and outputs`);
  if (tally.filters > MAX_TEMPLATE_FILTERS) throw ValidationError.field(field, `uses more than ${MAX_TEMPLATE_FILTERS} filters`);
}
