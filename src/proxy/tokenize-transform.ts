/**
 * The `tokenize` transform of a pre-configured proxy (docs/proxies.md, Transforms): its expression
 * is a JSON token body (or an array of them) whose `data` is `{{ args.<path> }}`, a place in the
 * JSON body. Each token is created as the proxy's application (within the grants it was bound
 * with) and the body's value there is replaced by the token's id; with `location` (response only)
 * the value is removed and the id (ids: an array) written at that path instead.
 */
import { ValidationError } from '../errors/errors.js';
import { type PathStep, deleteAt, getAt, parsePath, setAt } from './proxy-json-path.js';

const REFERENCE = /^\{\{\s*(args(?:[.[][^}]*)?)\s*\}\}$/;

/** Creates one token as the proxy's application; returns its id. */
export type CreateToken = (body: Record<string, unknown>) => Promise<string>;

/**
 * Tokenizes the values the template names in `body` (a parsed JSON body, changed in place);
 * returns the ids of the tokens created. `field` names the transform in errors.
 */
export async function tokenizeBody(template: string, location: string | undefined, body: unknown, create: CreateToken, field: string): Promise<string[]> {
  if (body === null || typeof body !== 'object') throw ValidationError.field(field, 'tokenizes a JSON body: the body is not a JSON object or array');
  const bodies = templateBodies(template, field);
  const places: PathStep[][] = [];
  const prepared = bodies.map((tokenBody, i) => {
    const reference = typeof tokenBody['data'] === 'string' ? REFERENCE.exec(tokenBody['data']) : null;
    if (reference === null) throw ValidationError.field(`${field}.expression`, `token ${i}: data must be '{{ args.<path> }}', the place in the body to tokenize`);
    const steps = parsePath(reference[1]!, 'args', `${field}.expression`);
    if (steps.length === 0) throw ValidationError.field(`${field}.expression`, "must name a place in the body ('{{ args.card }}'), not the whole body");
    const value = getAt(body, steps);
    if (value === undefined || value === null) throw ValidationError.field(field, `${reference[1]} is not in the body`);
    places.push(steps);
    return { ...tokenBody, data: value };
  });
  const ids: string[] = [];
  for (const tokenBody of prepared) ids.push(await create(tokenBody));
  if (location === undefined) {
    places.forEach((steps, i) => setAt(body, steps, ids[i]));
    return ids;
  }
  const target = parsePath(location, '$', `${field}.location`);
  for (const steps of places) deleteAt(body, steps);
  if (!setAt(body, target, ids.length === 1 ? ids[0] : ids)) throw ValidationError.field(`${field}.location`, `'${location}' is not a place in the body`);
  return ids;
}

function templateBodies(template: string, field: string): Record<string, unknown>[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(template);
  } catch {
    throw ValidationError.field(`${field}.expression`, 'is not JSON: a token body, or an array of token bodies');
  }
  const list = Array.isArray(parsed) ? parsed : [parsed];
  if (list.length === 0 || list.some((item) => item === null || typeof item !== 'object' || Array.isArray(item))) {
    throw ValidationError.field(`${field}.expression`, 'must be a token body, or an array of token bodies');
  }
  return list as Record<string, unknown>[];
}
