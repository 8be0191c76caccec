import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';
import { PageSchema } from '../common/pagination.js';
import { addError, printableKey } from '../validation/field-errors.js';
import { validationFromIssues } from '../validation/issues.js';
import type { PageQuery } from '../common/pagination.js';

export interface SearchTokensQuery extends PageQuery {
  /** Terms `field:value` joined by AND: data, type, container, fingerprint, id, metadata.<key>. */
  query: string;
}

/** Every attribute a search body may hold. */
export const SEARCH_KEYS = ['query', 'page', 'size', 'start'] as const;

/**
 * The Search Tokens body (`POST /tokens/search`): the query and the paging attributes. The query's
 * terms are parsed by parseSearchQuery; the OpenAPI request schema is generated from this schema.
 */
export const SearchTokensSchema = v.strictObject({
  query: v.string('must be a string of field:value terms joined by AND'),
  ...PageSchema.entries,
});

/**
 * Validates a search body with SearchTokensSchema. An unknown attribute is an error naming it (a
 * mistyped `size` or a filter sent in the wrong place must not silently search with defaults), as
 * create does; it is checked first, by hand, for that message in our words. The query's terms are
 * parsed by parseSearchQuery.
 */
export function checkSearchInput(body: unknown): SearchTokensQuery {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw ValidationError.field('body', 'must be a JSON object');
  const errors: Record<string, string[]> = {};
  const allowed = `allowed: ${SEARCH_KEYS.join(', ')}`;
  for (const key of Object.keys(body)) {
    if ((SEARCH_KEYS as readonly string[]).includes(key)) continue;
    const name = printableKey(key);
    // addError: `errors['__proto__'] = …` would replace the prototype and lose the error.
    if (name === null) addError(errors, 'body', `has an unrecognized attribute; ${allowed}`);
    else addError(errors, name, `is not a recognized attribute; ${allowed}`);
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  const parsed = v.safeParse(SearchTokensSchema, body);
  if (!parsed.success) throw validationFromIssues(parsed.issues);
  return parsed.output;
}
