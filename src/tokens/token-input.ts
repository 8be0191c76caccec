import * as v from 'valibot';
import { ValidationError } from '../errors.js';
import type { FieldErrors } from '../errors.js';
import { issuesToFieldErrors } from '../validation/issues.js';
import { normalizeContainers } from './containers.js';

/** Limits on a token's input (the spec is silent; these keep rows and indexes bounded). */
export const TOKEN_INPUT_LIMITS = Object.freeze({
  idLength: 250,
  typeLength: 64,
  expressionLength: 4096,
  searchIndexes: 100,
  metadataKeys: 100,
  metadataKeyLength: 128,
  metadataValueLength: 1024,
  /** Deepest nesting of arrays/objects accepted in data and mask. */
  jsonDepth: 64,
});

/** The Create Token body (spec 4.1) after validation. `null` for an optional attribute means absent. */
export interface CreateTokenInput {
  /** A literal id or an id expression; rendered and checked by the service. */
  id?: string;
  /** A token type name; the service resolves it with `getTokenType`, which also validates `data`. */
  type: string;
  /** Any JSON value but null. */
  data: unknown;
  mask?: unknown;
  /** Normalized: lower-cased, deduplicated, at least one. */
  containers?: string[];
  metadata?: Record<string, string>;
  search_indexes?: string[];
  fingerprint_expression?: string;
  deduplicate_token?: boolean;
  /** As given; the service parses it with `parseExpiresAt` against its clock. */
  expires_at?: string;
}

/**
 * The Update Token body (spec 4.1, a JSON merge patch) after validation. Absent: unchanged.
 * `data`, `mask` and `metadata` are merge patches (a null inside deletes that key); `mask: null`
 * removes the mask and `metadata: null` removes all metadata. For the replaced attributes, null
 * resets to the create-time default: containers and fingerprint_expression to the type's, no
 * search indexes, deduplicate_token false, and no expiry.
 */
export interface UpdateTokenInput {
  /** Never null: a token always has data. */
  data?: unknown;
  mask?: unknown;
  metadata?: Record<string, string | null> | null;
  containers?: string[] | null;
  search_indexes?: string[] | null;
  fingerprint_expression?: string | null;
  deduplicate_token?: boolean | null;
  expires_at?: string | null;
}

/** Every attribute a Create Token body may hold (others are refused by name). */
export const CREATE_KEYS = [
  'id', 'type', 'data', 'mask', 'containers', 'metadata', 'search_indexes',
  'fingerprint_expression', 'deduplicate_token', 'expires_at',
] as const;
/** Every attribute an Update Token body may hold (others are refused by name). */
export const UPDATE_KEYS = [
  'data', 'mask', 'metadata', 'containers', 'search_indexes', 'fingerprint_expression',
  'deduplicate_token', 'expires_at',
] as const;

const L = TOKEN_INPUT_LIMITS;
const expression = v.pipe(
  v.string('must be an expression string'),
  v.maxLength(L.expressionLength, `must be at most ${L.expressionLength} characters`),
);
const searchIndexes = v.pipe(
  v.array(
    v.pipe(expression, v.minLength(1, 'must not be empty')),
    'must be an array of expression strings',
  ),
  v.maxLength(L.searchIndexes, `must have at most ${L.searchIndexes} entries`),
);
const deduplicate = v.boolean('must be a boolean');
const expiresAt = v.string('must be a string (an ISO 8601 date-time, M/D/YYYY h:mm:ss AM|PM ±hh:mm or M/D/YYYY)');

// data, mask, containers and metadata are checked by hand: they need JSON checks, normalization, or
// per-key reporting that valibot's record schema does not give (it skips keys like "__proto__").
/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const createSchema = v.object(
  {
    id: v.nullish(
      v.pipe(
        v.string('must be a string'),
        v.minLength(1, 'must not be empty'),
        v.maxLength(L.idLength, `must be at most ${L.idLength} characters`),
      ),
    ),
    type: v.pipe(
      v.string('must be a string naming a token type'),
      v.minLength(1, 'must not be empty'),
      v.maxLength(L.typeLength, `must be at most ${L.typeLength} characters`),
    ),
    search_indexes: v.nullish(searchIndexes),
    fingerprint_expression: v.nullish(expression),
    deduplicate_token: v.nullish(deduplicate),
    expires_at: v.nullish(expiresAt),
  },
  'must be a JSON object',
);
/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const updateSchema = v.object(
  {
    search_indexes: v.nullish(searchIndexes),
    fingerprint_expression: v.nullish(expression),
    deduplicate_token: v.nullish(deduplicate),
    expires_at: v.nullish(expiresAt),
  },
  'must be a JSON object',
);

/**
 * Validates a Create Token body. Every problem is reported at once, keyed by its path
 * (`metadata.customer`, `containers[1]`, `search_indexes[0]`); unknown attributes are errors.
 * It checks shape only: the type name and the data's per-type rules are `getTokenType`'s job.
 * @example parseCreateTokenInput({ type: 'card', data: { number: '4242424242424242' } })
 */
export function parseCreateTokenInput(body: unknown): CreateTokenInput {
  const input = requireObject(body);
  const errors = unknownKeyErrors(input, CREATE_KEYS);
  const parsed = v.safeParse(createSchema, input);
  if (!parsed.success) mergeInto(errors, issuesToFieldErrors(parsed.issues, { schema: createSchema }));

  if (input['data'] === undefined || input['data'] === null) addError(errors, 'data', 'is required');
  else mergeInto(errors, jsonProblems(input['data'], 'data'));
  if (input['mask'] !== undefined && input['mask'] !== null) mergeInto(errors, jsonProblems(input['mask'], 'mask'));
  const containers = collect(errors, () => nullable(input['containers'], (c) => normalizeContainers(c)));
  const metadata = collect(errors, () => nullable(input['metadata'], (m) => parseMetadata(m)));

  if (Object.keys(errors).length > 0 || !parsed.success) throw new ValidationError(errors);
  const out = parsed.output;
  const result: CreateTokenInput = { type: out.type, data: input['data'] };
  if (out.id != null) result.id = out.id;
  if (input['mask'] !== undefined && input['mask'] !== null) result.mask = input['mask'];
  if (containers != null) result.containers = containers;
  if (metadata != null) result.metadata = metadata;
  if (out.search_indexes != null) result.search_indexes = out.search_indexes;
  if (out.fingerprint_expression != null) result.fingerprint_expression = out.fingerprint_expression;
  if (out.deduplicate_token != null) result.deduplicate_token = out.deduplicate_token;
  if (out.expires_at != null) result.expires_at = out.expires_at;
  return result;
}

/**
 * Validates an Update Token (merge patch) body; see UpdateTokenInput for what null means per
 * attribute. `id` and `type` cannot be changed. Reported like parseCreateTokenInput.
 * @example parseUpdateTokenInput({ metadata: { stale: null }, expires_at: null })
 */
export function parseUpdateTokenInput(body: unknown): UpdateTokenInput {
  const input = requireObject(body);
  const errors = unknownKeyErrors(input, UPDATE_KEYS);
  for (const fixed of ['id', 'type']) {
    if (Object.hasOwn(input, fixed)) errors[fixed] = ['cannot be changed; create a new token instead'];
  }
  const parsed = v.safeParse(updateSchema, input);
  if (!parsed.success) mergeInto(errors, issuesToFieldErrors(parsed.issues, { schema: updateSchema }));

  if (input['data'] === null) addError(errors, 'data', 'cannot be null: a token always has data');
  else if (input['data'] !== undefined) mergeInto(errors, jsonProblems(input['data'], 'data'));
  if (input['mask'] !== undefined && input['mask'] !== null) mergeInto(errors, jsonProblems(input['mask'], 'mask'));
  const containers = collect(errors, () => nullable(input['containers'], (c) => normalizeContainers(c)));
  const metadata = collect(errors, () => nullable(input['metadata'], (m) => parseMetadataPatch(m)));

  if (Object.keys(errors).length > 0 || !parsed.success) throw new ValidationError(errors);
  const out = parsed.output;
  const result: UpdateTokenInput = {};
  if (input['data'] !== undefined) result.data = input['data'];
  if (input['mask'] !== undefined) result.mask = input['mask'];
  if (input['metadata'] !== undefined) result.metadata = metadata ?? null;
  if (input['containers'] !== undefined) result.containers = containers ?? null;
  if (out.search_indexes !== undefined) result.search_indexes = out.search_indexes;
  if (out.fingerprint_expression !== undefined) result.fingerprint_expression = out.fingerprint_expression;
  if (out.deduplicate_token !== undefined) result.deduplicate_token = out.deduplicate_token;
  if (out.expires_at !== undefined) result.expires_at = out.expires_at;
  return result;
}

/**
 * Validates a complete metadata map: string keys of 1-128 characters, string values of at most
 * 1024, at most 100 keys. Returns a fresh object. The service also calls it on the result of an
 * update's merge patch, since only then is the key count known.
 */
export function parseMetadata(value: unknown, field = 'metadata'): Record<string, string> {
  return checkMetadata(value, field, false) as Record<string, string>;
}

/** Like parseMetadata, but values may be null (merge patch: delete that key). */
export function parseMetadataPatch(value: unknown, field = 'metadata'): Record<string, string | null> {
  return checkMetadata(value, field, true);
}

function checkMetadata(value: unknown, field: string, allowNull: boolean): Record<string, string | null> {
  if (!isPlainObject(value)) throw ValidationError.field(field, 'must be an object whose values are strings');
  const entries = Object.entries(value);
  const errors: FieldErrors = {};
  if (entries.length > L.metadataKeys) addError(errors, field, `must have at most ${L.metadataKeys} keys`);
  for (const [key, item] of entries) {
    const path = `${field}.${key}`;
    if (key.length === 0 || key.length > L.metadataKeyLength) {
      addError(errors, field, `keys must be 1 to ${L.metadataKeyLength} characters`);
    } else if (item === null && allowNull) {
      continue;
    } else if (typeof item !== 'string') {
      addError(errors, path, 'must be a string (metadata values are strings only)');
    } else if (item.length > L.metadataValueLength) {
      addError(errors, path, `must be at most ${L.metadataValueLength} characters`);
    }
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  return Object.fromEntries(entries) as Record<string, string | null>;
}


/**
 * Checks that a value is plain JSON (null, boolean, finite number, string, array, plain object),
 * at most TOKEN_INPUT_LIMITS.jsonDepth deep. Problems are keyed by path; the first ten are kept.
 */
export function jsonProblems(value: unknown, path: string): FieldErrors {
  const errors: FieldErrors = {};
  let count = 0;
  const visit = (node: unknown, at: string, depth: number): void => {
    if (count >= 10) return;
    if (node === null || typeof node === 'string' || typeof node === 'boolean') return;
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) report(at, 'must be a finite number');
      return;
    }
    if (Array.isArray(node) || isPlainObject(node)) {
      if (depth >= L.jsonDepth) return report(at, `nests deeper than ${L.jsonDepth} levels`);
      if (Array.isArray(node)) node.forEach((item, i) => visit(item, `${at}[${i}]`, depth + 1));
      else {
        for (const [key, item] of Object.entries(node)) {
          // Data keys may themselves be sensitive: an unprintable key reports at its parent.
          const name = printableKey(key);
          visit(item, name === null ? at : `${at}.${name}`, depth + 1);
        }
      }
      return;
    }
    report(at, 'must be a JSON value (null, boolean, number, string, array or object)');
  };
  const report = (at: string, message: string): void => {
    count++;
    addError(errors, at, message);
  };
  visit(value, path, 0);
  return errors;
}

/**
 * A key as it may appear in a field path: identifiers only, so a stray key that is really a value
 * (a card number used as a key) is never echoed. Returns null for anything else.
 */
export function printableKey(key: string): string | null {
  return /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(key) ? key : null;
}

/** Adds `message` to `field`'s messages. */
export function addError(errors: FieldErrors, field: string, message: string): void {
  // Own properties only: a field named `__proto__` (an unknown attribute of the body) must not
  // reach Object.prototype, nor set the prototype of `errors` by assignment.
  let list = Object.hasOwn(errors, field) ? errors[field] : undefined;
  if (list === undefined) {
    list = [];
    Object.defineProperty(errors, field, { value: list, enumerable: true, writable: true, configurable: true });
  }
  if (!list.includes(message)) list.push(message);
}

/** Adds every message of `more` into `errors`. */
export function mergeInto(errors: FieldErrors, more: FieldErrors): void {
  for (const [field, messages] of Object.entries(more)) for (const m of messages) addError(errors, field, m);
}

function requireObject(body: unknown): Record<string, unknown> {
  if (!isPlainObject(body)) throw ValidationError.field('body', 'must be a JSON object');
  return body;
}

/** The keys each list allows, with `id` and `type`, built once per list (this runs on every write). */
const knownKeys = new WeakMap<readonly string[], ReadonlySet<string>>();

function unknownKeyErrors(input: Record<string, unknown>, allowed: readonly string[]): FieldErrors {
  const errors: FieldErrors = {};
  let known = knownKeys.get(allowed);
  if (known === undefined) {
    known = new Set<string>([...allowed, 'id', 'type']);
    knownKeys.set(allowed, known);
  }
  for (const key of Object.keys(input)) {
    if (known.has(key)) continue;
    const name = printableKey(key);
    const message = `is not a recognized attribute; allowed: ${allowed.join(', ')}`;
    if (name === null) addError(errors, 'body', 'has an unrecognized attribute; allowed: ' + allowed.join(', '));
    else addError(errors, name, message);
  }
  return errors;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Applies `parse` unless the value is absent or null (which pass through as-is). */
function nullable<T>(value: unknown, parse: (value: unknown) => T): T | null | undefined {
  return value === undefined || value === null ? (value as null | undefined) : parse(value);
}

/** Runs a validator, moving its ValidationError into `errors` so every problem is reported at once. */
function collect<T>(errors: FieldErrors, run: () => T): T | undefined {
  try {
    return run();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    mergeInto(errors, error.errors);
    return undefined;
  }
}
