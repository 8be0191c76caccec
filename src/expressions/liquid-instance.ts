/**
 * The liquid instance expressions render with, locked down because API callers write the templates
 * (see engine.ts for the whole list of safeguards).
 */
import { Liquid } from 'liquidjs';
import type { FS, FilterImplOptions } from 'liquidjs';
import { vaultFilters } from './filters.js';

/** Longest template accepted, in characters. Masks and fingerprints are a few dozen characters. */
export const MAX_TEMPLATE_LENGTH = 16_384;
/**
 * Wall-clock budget of one render, in ms (liquid checks it between template nodes). Templates have no
 * loops and at most 64 nodes (template-limits.ts), so an allowed render takes well under a
 * millisecond on ordinary data and a few on a megabyte of it: this is a backstop, for renders outside a
 * request budget too (reactor detokenization), and no lower so that a GC pause does not fail a render.
 */
export const RENDER_LIMIT_MS = 100;
/** Budget of liquid-counted allocations (ranges, array and string filters) per render. */
export const MEMORY_LIMIT = 2_000_000;
export const DISALLOWED_TAGS = ['include', 'render', 'layout'] as const;

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

export function createLiquid(): Liquid {
  const liquid = new Liquid({
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
  for (const tag of DISALLOWED_TAGS) delete liquid.tags[tag];
  for (const [name, filter] of Object.entries(vaultFilters)) {
    liquid.registerFilter(name, filter as FilterImplOptions);
  }
  return liquid;
}
