import { ValidationError } from '../errors/errors.js';
import type { TokenFilter } from '../storage/store.js';
import type { SearchTerm } from './search-query.js';
import { TOKEN_INPUT_LIMITS } from './token-input-schemas.js';

/** Most metadata filters of one list, or metadata terms of one search (as many as a token may have keys). */
export const MAX_METADATA_FILTERS = TOKEN_INPUT_LIMITS.metadataKeys;
/**
 * Most `data:` terms of one search: as many as a token may have search indexes (more cannot all
 * match). Each is a clause of the store's query; thousands kept PostgreSQL busy for minutes.
 */
export const MAX_DATA_TERMS = TOKEN_INPUT_LIMITS.searchIndexes;

/**
 * The store filter of a search's terms, ANDed. `data:` terms become blind-index hashes (with
 * `blindIndex`, the tenant's keyed HMAC). `oracle`: whether a term tests the data itself (data,
 * fingerprint), so that only tokens the caller may reveal can match.
 */
export function searchFilter(terms: readonly SearchTerm[], blindIndex: (value: string) => string): { filter: TokenFilter; oracle: boolean } {
  const filter: TokenFilter = {};
  let oracle = false;
  let metadataTerms = 0;
  let dataTerms = 0;
  const single = (key: 'ids' | 'types' | 'fingerprints' | 'containers', value: string) => {
    const current = filter[key];
    // AND of two different values of a single-valued field matches nothing.
    filter[key] = current === undefined || current.includes(value) ? [value] : [];
  };
  for (const term of terms) {
    switch (term.field) {
      case 'data':
        if (++dataTerms > MAX_DATA_TERMS) throw ValidationError.field('query', `has more than ${MAX_DATA_TERMS} data terms (a token has at most ${MAX_DATA_TERMS} search indexes)`);
        oracle = true;
        (filter.searchHashes ??= []).push(blindIndex(term.value));
        break;
      case 'type':
        single('types', term.value);
        break;
      case 'id':
        single('ids', term.value);
        break;
      case 'fingerprint':
        oracle = true;
        single('fingerprints', term.value);
        break;
      case 'container':
        // A token may be in several containers; every container named must be among them.
        if (!filter.containers?.includes(term.value)) (filter.containers ??= []).push(term.value);
        break;
      case 'metadata': {
        if (++metadataTerms > MAX_METADATA_FILTERS) throw ValidationError.field('query', `has more than ${MAX_METADATA_FILTERS} metadata terms`);
        // No prototype: a key such as '__proto__' or 'constructor' is a key like any other.
        const meta = (filter.metadata ??= Object.create(null) as Record<string, string>);
        const existing = Object.hasOwn(meta, term.key) ? meta[term.key] : undefined;
        meta[term.key] = existing === undefined || existing.toLowerCase() === term.value.toLowerCase() ? term.value : '\u0000';
        break;
      }
    }
  }
  return { filter, oracle };
}

/** A list query's repeatable parameter as an array of non-empty strings. */
export function toArray(value: string | string[] | undefined, field: string): string[] | undefined {
  if (value === undefined) return undefined;
  const values = Array.isArray(value) ? value : [value];
  values.forEach((item, i) => {
    if (typeof item !== 'string' || item.length === 0) throw ValidationError.field(`${field}[${i}]`, 'must be a non-empty string');
  });
  return values;
}

/** A list query's metadata filter: an object of at most MAX_METADATA_FILTERS strings. */
export function checkMetadataFilter(metadata: Record<string, string>): Record<string, string> {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) throw ValidationError.field('metadata', 'must be an object of strings');
  // Each filter is one more probe in the store query: bounded like a token's metadata keys.
  if (Object.keys(metadata).length > MAX_METADATA_FILTERS) throw ValidationError.field('metadata', `must have at most ${MAX_METADATA_FILTERS} filters`);
  for (const [key, value] of Object.entries(metadata)) {
    if (typeof value !== 'string') throw ValidationError.field(`metadata.${key}`, 'must be a string');
  }
  return metadata;
}
