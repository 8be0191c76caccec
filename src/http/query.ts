import type { ListLogsQuery } from '../audit/audit-service.js';
import type { PageQuery } from '../common/pagination.js';
import type { ListTokensQuery } from '../tokens/token-service.js';
import { ValidationError } from '../errors/errors.js';

/**
 * Query-string parsing for the list endpoints. Values are passed to the services as strings; the
 * services validate them. A parameter given twice that is not repeatable uses its first value.
 * Unknown parameters never reach these functions: the handler rejects them by name first
 * (query-rule.ts), so a mistyped filter is a 400, never a list of every token.
 */

/** `page`, `size` and `start`. */
export function pageQuery(params: URLSearchParams): PageQuery {
  const query: PageQuery = {};
  const page = params.get('page');
  const size = params.get('size');
  const start = params.get('start');
  if (page !== null) query.page = page;
  if (size !== null) query.size = size;
  if (start !== null) query.start = start;
  return query;
}

/**
 * GET /tokens: repeatable `id` and `type`, metadata filters as `metadata.<key>=<value>` or
 * `metadata[<key>]=<value>` (deepObject style, what generated OpenAPI clients send); a key given
 * twice, in either form, keeps its first value; paging.
 */
export function tokenListQuery(params: URLSearchParams): ListTokensQuery {
  const query: ListTokensQuery = pageQuery(params);
  const ids = params.getAll('id');
  const types = params.getAll('type');
  if (ids.length > 0) query.id = ids;
  if (types.length > 0) query.type = types;
  let metadata: Record<string, string> | undefined;
  for (const [name, value] of params) {
    const key = metadataKey(name);
    if (key === null) continue;
    metadata ??= Object.create(null) as Record<string, string>;
    if (!Object.hasOwn(metadata, key)) metadata[key] = value;
  }
  if (metadata) query.metadata = { ...metadata };
  return query;
}

/**
 * GET /v2/tokens (Basis Theory's v2 list): one `type`, `container`, `fingerprint`, cursor paging
 * (`start`, `size`; no `page`: the route does not declare it). Metadata filters come as the
 * Basis Theory SDK sends them, `metadata=<JSON object>`.
 */
export function tokenListV2Query(params: URLSearchParams): ListTokensQuery {
  const json = params.get('metadata');
  const rest = new URLSearchParams([...params].filter(([name]) => name !== 'metadata'));
  const query = tokenListQuery(rest);
  for (const name of ['container', 'fingerprint'] as const) {
    const value = params.get(name);
    if (value !== null) query[name] = value;
  }
  if (json !== null) query.metadata = metadataObject(json);
  return query;
}

/** `metadata={"key":"value"}`: an object of strings (the service checks the values and the count). */
function metadataObject(json: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw ValidationError.field('metadata', 'must be a JSON object of strings, e.g. metadata={"key":"value"}');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw ValidationError.field('metadata', 'must be a JSON object of strings, e.g. metadata={"key":"value"}');
  // No prototype: a key such as '__proto__' is a key like any other.
  return Object.assign(Object.create(null) as Record<string, string>, parsed);
}

/** The metadata key a query parameter filters on (`metadata.k` or `metadata[k]`), or null. */
export function metadataKey(name: string): string | null {
  if (name.startsWith('metadata.')) return name.slice('metadata.'.length);
  if (name.startsWith('metadata[') && name.endsWith(']')) return name.slice('metadata['.length, -1);
  return null;
}

/** GET /reactors: repeatable `id`, `name` (wildcard search), paging. */
export function reactorListQuery(params: URLSearchParams): { id?: string[]; name?: string } & PageQuery {
  const query: { id?: string[]; name?: string } & PageQuery = pageQuery(params);
  const ids = params.getAll('id');
  const name = params.get('name');
  if (ids.length > 0) query.id = ids;
  if (name !== null) query.name = name;
  return query;
}

/** GET /logs: `resource_id`, `actor`, `operation`, Basis Theory's `entity_id` and `entity_type`, paging. */
export function logListQuery(params: URLSearchParams): ListLogsQuery {
  const query: ListLogsQuery = pageQuery(params);
  for (const name of ['resource_id', 'actor', 'operation', 'entity_id', 'entity_type'] as const) {
    const value = params.get(name);
    if (value !== null) query[name] = value;
  }
  return query;
}
