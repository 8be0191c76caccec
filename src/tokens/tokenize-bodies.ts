import { ValidationError } from '../errors/errors.js';
import type { TokenView } from './token-view.js';

/** Most tokens one tokenize call creates. */
export const MAX_TOKENIZE = 100;
/** Deepest nesting of a tokenize body searched for create bodies (a create body's data has its own limit). */
const MAX_TOKENIZE_DEPTH = 64;

/**
 * Finds create bodies (objects with a string `type` and a `data` key) in a tokenize body, depth
 * first, at most MAX_TOKENIZE_DEPTH levels down (a deeper body is refused before any recursion
 * could exhaust the stack).
 */
export function collectTokenBodies(value: unknown, path: string, out: { path: string; body: unknown }[], depth: number): void {
  if (value === null || typeof value !== 'object' || isTokenBody(value)) {
    if (isTokenBody(value)) out.push({ path, body: value });
    return;
  }
  if (depth >= MAX_TOKENIZE_DEPTH) throw ValidationError.field('body', `nests deeper than ${MAX_TOKENIZE_DEPTH} levels`);
  if (Array.isArray(value)) value.forEach((item, i) => collectTokenBodies(item, `${path}[${i}]`, out, depth + 1));
  else for (const [key, item] of Object.entries(value)) collectTokenBodies(item, path ? `${path}.${key}` : key, out, depth + 1);
}

/** The tokenize body with each create body replaced by the token made from it. */
export function replaceTokenBodies(value: unknown, views: Map<unknown, TokenView>): unknown {
  const view = views.get(value);
  if (view) return view;
  if (Array.isArray(value)) return value.map((item) => replaceTokenBodies(item, views));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replaceTokenBodies(item, views)]));
  }
  return value;
}

/** A tokenize item: an object with a string `type` and a `data` key. */
export function isTokenBody(value: unknown): value is { type: string; data: unknown } {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && typeof (value as { type?: unknown }).type === 'string' && 'data' in value;
}
