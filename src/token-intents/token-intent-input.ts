import * as v from 'valibot';
import { type FieldErrors, ValidationError } from '../errors/errors.js';
import { addError, mergeInto, printableKey } from '../validation/field-errors.js';
import { issuesToFieldErrors } from '../validation/issues.js';
import { isPlainObject, jsonProblems } from '../tokens/token-input-checks.js';
import { CREATE_KEYS, TOKEN_INPUT_LIMITS as L } from '../tokens/token-input-schemas.js';

/** The Create Token Intent body after validation (the type's own rules are `getTokenType`'s job). */
export interface CreateTokenIntentInput {
  type: string;
  /** Any JSON value but null; the type validates it. */
  data: unknown;
}

/**
 * A Create Token body that converts an intent: `token_intent_id` and the token attributes a create
 * body may hold, except `type` and `data`, which the intent gives.
 */
export interface ConvertTokenIntentInput {
  token_intent_id: string;
  [attribute: string]: unknown;
}

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const CreateTokenIntentSchema = v.object(
  {
    type: v.pipe(v.string('must be a string naming a token type'), v.minLength(1, 'must not be empty'), v.maxLength(L.typeLength, `must be at most ${L.typeLength} characters`)),
  },
  'must be a JSON object',
);

/** An intent id as a conversion names it (ids are `intent_` and a UUID: token-intent-id.ts; the limit is the token id's). */
export const TokenIntentIdSchema = v.pipe(
  v.string('must be a string (the id of a token intent)'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(L.idLength, `must be at most ${L.idLength} characters`),
);

const CREATE_INTENT_KEYS = ['type', 'data'] as const;

/**
 * Validates a Create Token Intent body: exactly `type` and `data` (not null, at most
 * TOKEN_INPUT_LIMITS.jsonDepth deep); every problem is reported at once, unknown attributes by name.
 * @example parseCreateTokenIntentInput({ type: 'card', data: { number: '4242424242424242' } })
 */
export function parseCreateTokenIntentInput(body: unknown): CreateTokenIntentInput {
  if (!isPlainObject(body)) throw ValidationError.field('body', 'must be a JSON object with type and data');
  const errors = unknownKeys(body, CREATE_INTENT_KEYS, 'allowed: type, data');
  const parsed = v.safeParse(CreateTokenIntentSchema, body);
  if (!parsed.success) mergeInto(errors, issuesToFieldErrors(parsed.issues, { schema: CreateTokenIntentSchema }));
  if (body['data'] === undefined || body['data'] === null) addError(errors, 'data', 'is required');
  else mergeInto(errors, jsonProblems(body['data'], 'data'));
  if (Object.keys(errors).length > 0 || !parsed.success) throw new ValidationError(errors);
  return { type: parsed.output.type, data: body['data'] };
}

/** Whether a Create Token body converts an intent (it names `token_intent_id`). */
export function isConversion(body: unknown): body is ConvertTokenIntentInput {
  return isPlainObject(body) && Object.hasOwn(body, 'token_intent_id');
}

/**
 * Checks the parts of a conversion body that the intent does not complete: the intent id, and
 * that neither `type` nor `data` is given (the intent's are used). The other attributes are
 * checked as a Create Token body's once the intent's type and data are known. Returns the id and
 * the rest of the body.
 */
export function parseConversion(body: ConvertTokenIntentInput): { intentId: string; rest: Record<string, unknown> } {
  const { token_intent_id: id, ...rest } = body;
  const errors: FieldErrors = {};
  const parsed = v.safeParse(TokenIntentIdSchema, id);
  if (!parsed.success) mergeInto(errors, issuesToFieldErrors(parsed.issues, 'token_intent_id'));
  for (const taken of ['type', 'data']) {
    if (Object.hasOwn(rest, taken)) addError(errors, taken, 'is given by the token intent; leave it out when converting one');
  }
  mergeInto(errors, unknownKeys(rest, CREATE_KEYS, `allowed with token_intent_id: ${CREATE_KEYS.filter((k) => k !== 'type' && k !== 'data').join(', ')}`, ['type', 'data']));
  if (Object.keys(errors).length > 0 || !parsed.success) throw new ValidationError(errors);
  return { intentId: parsed.output, rest };
}

function unknownKeys(input: Record<string, unknown>, allowed: readonly string[], hint: string, skip: readonly string[] = []): FieldErrors {
  const errors: FieldErrors = {};
  for (const key of Object.keys(input)) {
    if (allowed.includes(key) || skip.includes(key)) continue;
    const name = printableKey(key);
    if (name === null) addError(errors, 'body', `has an unrecognized attribute; ${hint}`);
    else addError(errors, name, `is not a recognized attribute; ${hint}`);
  }
  return errors;
}
