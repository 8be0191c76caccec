import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';
import { validationFromIssues } from '../validation/issues.js';
import type { FormulaRecord, ReactorFilter } from '../storage/store.js';
import { CodeSchema } from './formula-input.js';

/** Reactor name length (docs/reactors.md). */
export const MAX_REACTOR_NAME = 200;
/** timeout_ms bounds and default (docs/reactors.md). */
export const TIMEOUT_MS = Object.freeze({ min: 10_000, max: 210_000, default: 10_000 });

const Name = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'is required'), v.maxLength(MAX_REACTOR_NAME, `must be at most ${MAX_REACTOR_NAME} characters`));
const CONFIGURATION_MESSAGE = 'must be an object of configuration names and values';
// valibot's record accepts arrays (as index → value maps), so the check is explicit.
/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const Configuration = v.custom<Record<string, unknown>>((value) => value !== null && typeof value === 'object' && !Array.isArray(value), CONFIGURATION_MESSAGE);
const Reference = v.strictObject({ id: v.pipe(v.string('must be a string'), v.minLength(1, 'is required'), v.maxLength(250, 'is too long')) }, 'must be an object with an id');

/** Inline-code reactors declare no configuration: any names, with string, number or boolean values (bounded). */
export const INLINE_CONFIGURATION_LIMITS = Object.freeze({ entries: 100, nameLength: 200, valueLength: 4096 });

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const CreateSchema = v.strictObject({
  name: Name,
  configuration: v.nullish(Configuration),
  formula: v.nullish(Reference),
  code: v.nullish(CodeSchema),
  application: v.nullish(Reference),
});

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const UpdateSchema = v.strictObject({
  name: Name,
  configuration: v.nullish(Configuration),
  code: v.nullish(CodeSchema),
  application: v.nullish(Reference),
});

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const PatchSchema = v.strictObject({
  name: v.optional(Name),
  configuration: v.optional(v.nullable(Configuration)),
  code: v.optional(CodeSchema),
  application: v.optional(v.nullable(Reference)),
});

export interface ReactorInput {
  name: string;
  /** Undefined when absent (required for a formula's reactor; `{}` for inline code). */
  configuration: Record<string, unknown> | undefined;
  /** Null: the reactor has no application (req.bt is null). */
  applicationId: string | null;
}

/** What a created reactor runs: a formula's code, or its own. */
export type ReactorSource = { formulaId: string } | { code: string };

/**
 * Validates a Create Reactor body: docs/reactors.md (`formula.id`, `configuration` required), or a reactor
 * with inline `code` instead of a formula (as current hosted vaults and their SDKs create them;
 * `configuration` optional). The configuration is checked by the service.
 */
export function parseCreateReactor(body: unknown): ReactorInput & { source: ReactorSource } {
  const result = v.safeParse(CreateSchema, asObject(body));
  if (!result.success) throw validationFromIssues(result.issues, { schema: CreateSchema });
  const { name, configuration, formula, code, application } = result.output;
  if (formula && code) throw ValidationError.field('code', 'cannot be given with formula: a reactor runs either a formula’s code or its own');
  if (!formula && !code) throw ValidationError.field('code', 'is required (the reactor’s JavaScript), unless formula.id names a formula to run');
  if (formula && (configuration === undefined || configuration === null)) throw ValidationError.field('configuration', 'is required (an object of configuration names and values)');
  return { name, configuration: configuration ?? undefined, source: formula ? { formulaId: formula.id } : { code: code! }, applicationId: application?.id ?? null };
}

/**
 * Validates an Update Reactor body (PUT, docs/reactors.md): name required; the formula cannot change; an
 * absent application removes it. A formula's reactor needs `configuration` and takes no `code`; a
 * reactor with inline code needs `code` (PUT replaces it) and its absent configuration is empty.
 */
export function parseUpdateReactor(body: unknown, inline: boolean): ReactorInput & { code: string | null } {
  const record = asObject(body);
  if ('formula' in record) throw ValidationError.field('formula', 'cannot be changed; create a new reactor for another formula');
  const result = v.safeParse(UpdateSchema, record);
  if (!result.success) throw validationFromIssues(result.issues, { schema: UpdateSchema });
  const { name, configuration, code, application } = result.output;
  if (inline && !code) throw ValidationError.field('code', 'is required (PUT replaces the reactor; PATCH changes only what it names)');
  if (!inline && code) throw ValidationError.field('code', 'cannot be set on a reactor that runs a formula’s code; update the formula, or create a reactor with inline code');
  if (!inline && (configuration === undefined || configuration === null)) throw ValidationError.field('configuration', 'is required (an object of configuration names and values)');
  return { name, configuration: configuration ?? undefined, code: code ?? null, applicationId: application?.id ?? null };
}

/** A validated merge patch of a reactor (PATCH): each attribute absent keeps its value. */
export interface ReactorPatch {
  name?: string;
  /** A merge patch of the configuration (RFC 7386); null empties it. */
  configuration?: Record<string, unknown> | null;
  code?: string;
  /** null unbinds the application. */
  applicationId?: string | null;
}

/**
 * Validates a PATCH body (RFC 7386 merge patch): `name`, `configuration` (merged; null empties it),
 * `code` (inline-code reactors only) and `application` (null removes it). The formula cannot change.
 */
export function parsePatchReactor(body: unknown, inline: boolean): ReactorPatch {
  const record = asObject(body);
  if ('formula' in record) throw ValidationError.field('formula', 'cannot be changed; create a new reactor for another formula');
  for (const field of ['name', 'code'] as const) {
    if (record[field] === null) throw ValidationError.field(field, 'cannot be removed (null); give a new value or leave it out');
  }
  const result = v.safeParse(PatchSchema, record);
  if (!result.success) throw validationFromIssues(result.issues);
  const { name, configuration, code, application } = result.output;
  if (!inline && code !== undefined)
    throw ValidationError.field('code', 'cannot be set on a reactor that runs a formula’s code; update the formula, or create a reactor with inline code');
  const patch: ReactorPatch = {};
  if (name !== undefined) patch.name = name;
  if (configuration !== undefined) patch.configuration = configuration;
  if (code !== undefined) patch.code = code;
  if (application !== undefined) patch.applicationId = application === null ? null : application.id;
  return patch;
}

/**
 * Checks the configuration of a reactor with inline code, which declares none: at most 100 names of
 * 1-200 characters, each a string (at most 4,096 characters), number or boolean. Returns a copy.
 */
export function checkInlineConfiguration(configuration: Record<string, unknown>): Record<string, unknown> {
  const L = INLINE_CONFIGURATION_LIMITS;
  const errors: Record<string, string[]> = {};
  const keys = Object.keys(configuration);
  if (keys.length > L.entries) errors['configuration'] = [`must have at most ${L.entries} entries`];
  const out: Record<string, unknown> = {};
  for (const key of keys.slice(0, L.entries)) {
    const value = configuration[key];
    if (key.length === 0 || key.length > L.nameLength) errors[`configuration.${key}`] = [`names must be 1 to ${L.nameLength} characters`];
    else if (typeof value === 'string' ? value.length > L.valueLength : typeof value === 'number' ? !Number.isFinite(value) : typeof value !== 'boolean') {
      errors[`configuration.${key}`] = [`must be a string (at most ${L.valueLength} characters), a number or a boolean`];
    } else Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  return out;
}

/**
 * Checks a configuration against the formula's declarations: every declared name present with its
 * declared type (no casting: configuration is written once by an administrator), nothing undeclared.
 * Returns a copy holding exactly the declared names.
 */
export function checkConfiguration(configuration: Record<string, unknown>, declared: FormulaRecord['configuration']): Record<string, unknown> {
  const errors: Record<string, string[]> = {};
  const out: Record<string, unknown> = {};
  const names = new Set(declared.map((d) => d.name));
  for (const key of Object.keys(configuration)) {
    if (!names.has(key))
      errors[`configuration.${key}`] = [
        names.size === 0 ? 'is not declared by the formula (it declares no configuration)' : `is not declared by the formula (declared: ${[...names].join(', ')})`,
      ];
  }
  for (const { name, type } of declared) {
    const value = Object.hasOwn(configuration, name) ? configuration[name] : undefined;
    if (value === undefined || value === null) errors[`configuration.${name}`] = [`is required (a ${type})`];
    else if (typeof value !== type || (type === 'number' && !Number.isFinite(value))) errors[`configuration.${name}`] = [`must be a ${type}`];
    else Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  return out;
}

export interface InvokeInput {
  args: unknown;
  /** The wall-time limit of an asynchronous run. */
  timeoutMs: number;
}

/** An Invoke Reactor body: the run's input, and where to deliver the result of an asynchronous run. */
export interface InvokeRequest extends InvokeInput {
  callbackUrl: string | null;
}

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const InvokeSchema = v.strictObject({
  args: v.nullish(v.unknown()),
  callback_url: v.nullish(v.string('must be an absolute http or https URL')),
  timeout_ms: v.nullish(
    v.pipe(
      v.number('must be a whole number of milliseconds'),
      v.integer('must be a whole number of milliseconds'),
      v.minValue(TIMEOUT_MS.min, `must be between ${TIMEOUT_MS.min} and ${TIMEOUT_MS.max}`),
      v.maxValue(TIMEOUT_MS.max, `must be between ${TIMEOUT_MS.min} and ${TIMEOUT_MS.max}`),
    ),
  ),
});

/**
 * Validates an Invoke Reactor body (docs/reactors.md): `args`, `timeout_ms` (the wall-time limit of an
 * asynchronous run, range-checked for both kinds) and `callback_url` (asks for an asynchronous run;
 * its address is checked by the asynchronous path).
 */
export function parseInvoke(body: unknown): InvokeRequest {
  const record = sdkSpelling(body === undefined || body === null ? {} : asObject(body));
  const result = v.safeParse(InvokeSchema, record);
  if (!result.success) throw validationFromIssues(result.issues, { schema: InvokeSchema });
  const { args, callback_url, timeout_ms } = result.output;
  if (args !== undefined && args !== null && (typeof args !== 'object' || Array.isArray(args))) {
    throw ValidationError.field('args', 'must be an object');
  }
  return { args: args ?? {}, timeoutMs: timeout_ms ?? TIMEOUT_MS.default, callbackUrl: callback_url ?? null };
}

/**
 * The Basis Theory SDK sends a react body's fields as it was given them, unconverted: `callbackUrl`
 * and `timeoutMs` are taken as `callback_url` and `timeout_ms` (docs/basis-theory.md
 * compatibility). Both spellings of one field are refused rather than one chosen silently.
 */
function sdkSpelling(record: Record<string, unknown>): Record<string, unknown> {
  if (!('callbackUrl' in record) && !('timeoutMs' in record)) return record;
  const out = { ...record };
  for (const [camel, snake] of [
    ['callbackUrl', 'callback_url'],
    ['timeoutMs', 'timeout_ms'],
  ] as const) {
    if (!(camel in out)) continue;
    if (snake in out) throw ValidationError.field(camel, `give ${snake} or ${camel}, not both`);
    out[snake] = out[camel];
    delete out[camel];
  }
  return out;
}

function asObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw ValidationError.field('body', 'must be a JSON object');
  return body as Record<string, unknown>;
}

/** The Create Reactor body as a caller sends it (validated by the service). */
export type CreateReactorRequest = v.InferInput<typeof CreateSchema>;
/** The Update (PUT) Reactor body as a caller sends it. */
export type UpdateReactorRequest = v.InferInput<typeof UpdateSchema>;
/** The PATCH Reactor body (a JSON merge patch) as a caller sends it. */
export type PatchReactorRequest = v.InferInput<typeof PatchSchema>;
/** The Invoke Reactor body as a caller sends it. */
export type ReactRequest = v.InferInput<typeof InvokeSchema>;

/** The store filter of a reactor list query (ids, name pattern). */
export function parseReactorFilter(query: { id?: unknown; name?: unknown }): ReactorFilter {
  const filter: ReactorFilter = {};
  if (query.id !== undefined) {
    const ids = Array.isArray(query.id) ? query.id : [query.id];
    ids.forEach((item, i) => {
      if (typeof item !== 'string' || item.length === 0) throw ValidationError.field(`id[${i}]`, 'must be a non-empty string');
    });
    filter.ids = ids;
  }
  if (query.name !== undefined && query.name !== null) {
    if (typeof query.name !== 'string' || query.name.length > 200) throw ValidationError.field('name', 'must be a string of at most 200 characters');
    if (query.name !== '') filter.name = query.name;
  }
  return filter;
}
