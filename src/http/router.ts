import { ValidationError } from '../errors/errors.js';

/** A route the router can hold: a method and a path pattern such as `/tokens/{id}`. */
export interface RoutePattern {
  readonly method: string;
  readonly path: string;
}

export type RouteMatch<T> = { kind: 'found'; route: T; params: Record<string, string> } | { kind: 'method_not_allowed'; allow: string[] } | { kind: 'not_found' };

/**
 * A small method + path router. Patterns are `/`-separated literals and `{name}` parameters that
 * match exactly one non-empty segment; parameters are percent-decoded. Matching is exact and
 * case-sensitive, except that one trailing slash routes like the path without it (`/tokens/` is
 * `/tokens`: clients such as the Basis Theory SDK send collection paths that way); two do not.
 * A path that matches with another method gives the methods allowed there, for a 405 with `Allow`.
 */
export class Router<T extends RoutePattern> {
  #routes: { route: T; segments: (string | { param: string })[] }[] = [];
  /** Routes by segment count: a path is only tried against routes as long as it (for 405's Allow). */
  #byLength = new Map<number, { route: T; segments: (string | { param: string })[] }[]>();
  /** The same by method, then segment count: a match tries only its method's routes, in the order added. */
  #byMethod = new Map<string, Map<number, { route: T; segments: (string | { param: string })[] }[]>>();
  /** Routes without parameters, by path then method: the common case costs one map lookup. */
  #static = new Map<string, Map<string, T>>();

  add(route: T): this {
    const segments = route.path
      .split('/')
      .slice(1)
      .map((segment) => (segment.startsWith('{') && segment.endsWith('}') ? { param: segment.slice(1, -1) } : segment));
    if (!route.path.startsWith('/')) throw new Error(`Route path must start with '/': ${route.path}`);
    for (const existing of this.#routes) {
      if (existing.route.method === route.method && existing.route.path === route.path) {
        throw new Error(`Duplicate route ${route.method} ${route.path}`);
      }
    }
    this.#routes.push({ route, segments });
    const sameLength = this.#byLength.get(segments.length) ?? [];
    sameLength.push({ route, segments });
    this.#byLength.set(segments.length, sameLength);
    const lengths = this.#byMethod.get(route.method) ?? new Map<number, { route: T; segments: (string | { param: string })[] }[]>();
    lengths.set(segments.length, [...(lengths.get(segments.length) ?? []), { route, segments }]);
    this.#byMethod.set(route.method, lengths);
    if (segments.every((s) => typeof s === 'string')) {
      const byMethod = this.#static.get(route.path) ?? new Map<string, T>();
      byMethod.set(route.method, route);
      this.#static.set(route.path, byMethod);
    }
    return this;
  }

  /** Every route, in the order added. */
  routes(): readonly T[] {
    return this.#routes.map((r) => r.route);
  }

  /** Finds the route for a method and a (still percent-encoded) path. */
  match(method: string, path: string): RouteMatch<T> {
    const pathname = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const byMethod = this.#static.get(pathname);
    const exact = byMethod?.get(method);
    if (exact) return { kind: 'found', route: exact, params: {} };
    const parts = pathname.split('/').slice(1);
    for (const { route, segments } of this.#byMethod.get(method)?.get(parts.length) ?? []) {
      const params = matchSegments(segments, parts);
      if (params !== null) return { kind: 'found', route, params: decodeParams(params) };
    }
    // No route for this method: the methods that match the path make a 405 with Allow.
    const candidates = this.#byLength.get(parts.length) ?? [];
    const allow = new Set<string>(byMethod ? byMethod.keys() : []);
    for (const { route, segments } of candidates) if (matchSegments(segments, parts) !== null) allow.add(route.method);
    return allow.size > 0 ? { kind: 'method_not_allowed', allow: [...allow].sort() } : { kind: 'not_found' };
  }
}

function matchSegments(segments: readonly (string | { param: string })[], parts: readonly string[]): Record<string, string> | null {
  // Literals first, so that a route that does not match allocates nothing.
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (typeof segment === 'string' ? segment !== parts[i] : parts[i] === '') return null;
  }
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (typeof segment !== 'string') params[segment.param] = parts[i]!;
  }
  return params;
}

function decodeParams(params: Record<string, string>): Record<string, string> {
  for (const name in params) {
    const value = params[name]!;
    if (!value.includes('%')) continue;
    try {
      params[name] = decodeURIComponent(value);
    } catch {
      throw ValidationError.field(name, 'is not valid percent-encoding');
    }
  }
  return params;
}
