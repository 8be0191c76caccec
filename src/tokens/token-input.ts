import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';
import type { FieldErrors } from '../errors/errors.js';
import { addError, mergeInto, printableKey } from '../validation/field-errors.js';
import { issuesToFieldErrors } from '../validation/issues.js';
import { normalizeContainers } from '../auth/containers.js';
import { isPlainObject, jsonProblems, parseMetadata, parseMetadataPatch } from './token-input-checks.js';
import { CREATE_KEYS, UPDATE_KEYS, createSchema, updateSchema } from './token-input-schemas.js';

/** The Create Token body (docs/tokens.md) after validation. `null` for an optional attribute means absent. */
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
 * The Update Token body (docs/tokens.md) after validation. Absent: unchanged.
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
