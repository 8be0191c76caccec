import { ValidationError } from '../errors/errors.js';
import { addError, printableKey } from '../validation/field-errors.js';
import type { QueryParameterDoc, RouteDefinition } from './routes/route.js';

/** The query parameters a route accepts: exact names, and the prefixes of its map parameters. */
interface Accepted {
  names: ReadonlySet<string>;
  maps: readonly string[];
  /** For the error message. */
  list: string;
}

const accepted = new WeakMap<RouteDefinition, Accepted>();

function acceptedBy(route: RouteDefinition): Accepted {
  let found = accepted.get(route);
  if (found === undefined) {
    const params: readonly QueryParameterDoc[] = route.docs.query ?? [];
    const maps = params.filter((p) => p.map).map((p) => p.name);
    found = {
      names: new Set(params.filter((p) => !p.map).map((p) => p.name)),
      maps,
      list: params.map((p) => (p.map ? `${p.name}[key], ${p.name}.key` : p.name)).join(', ') || 'none',
    };
    accepted.set(route, found);
  }
  return found;
}

/**
 * The one rule for query parameters: a parameter the route does not declare (route.docs.query) is
 * refused by name with a 400, as an unknown body attribute is. A mistyped filter (`?metdata.k=v`,
 * `?types=card`) would otherwise be ignored and answer every token. `search` is the raw query string.
 */
export function rejectUnknownQueryParameters(route: RouteDefinition, search: string): void {
  if (search.length <= 1) return;
  const { names, maps, list } = acceptedBy(route);
  const errors: Record<string, string[]> = {};
  for (const name of new URLSearchParams(search).keys()) {
    if (names.has(name)) continue;
    if (maps.some((m) => isMapMember(name, m))) continue;
    // A name may be a value typed in the wrong place (a card number): only identifiers are echoed.
    const field = printableKey(name.split('[')[0]!) ?? 'query';
    const message = `is not a query parameter of ${route.method} ${route.path}; accepted: ${list}`;
    // addError: a parameter named `__proto__` or `constructor` must get a list of its own.
    addError(errors, field, message);
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
}

function isMapMember(name: string, map: string): boolean {
  if (name.length <= map.length + 1 || !name.startsWith(map)) return false;
  const rest = name.slice(map.length);
  return rest.startsWith('.') || (rest.startsWith('[') && rest.endsWith(']') && rest.length > 2);
}
