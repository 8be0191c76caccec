import * as v from 'valibot';
import { ValidationError } from '../errors.js';
import { validationFromIssues } from '../pagination.js';
import type { FormulaRecord } from '../storage/store.js';

/** Reactor name length (spec 2.3, 8). */
export const MAX_REACTOR_NAME = 200;
/** timeout_ms bounds and default (spec 4.2, 8). */
export const TIMEOUT_MS = Object.freeze({ min: 10_000, max: 210_000, default: 10_000 });

const Name = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'is required'), v.maxLength(MAX_REACTOR_NAME, `must be at most ${MAX_REACTOR_NAME} characters`));
const CONFIGURATION_MESSAGE = 'must be an object of configuration names and values';
// valibot's record accepts arrays (as index → value maps), so the check is explicit.
/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const Configuration = v.custom<Record<string, unknown>>(
  (value) => value !== null && typeof value === 'object' && !Array.isArray(value),
  CONFIGURATION_MESSAGE,
);
const Reference = v.strictObject({ id: v.pipe(v.string('must be a string'), v.minLength(1, 'is required'), v.maxLength(250, 'is too long')) }, 'must be an object with an id');

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const CreateSchema = v.strictObject({
  name: Name,
  configuration: Configuration,
  formula: Reference,
  application: v.nullish(Reference),
});

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const UpdateSchema = v.strictObject({
  name: Name,
  configuration: Configuration,
  application: v.nullish(Reference),
});

export interface ReactorInput {
  name: string;
  configuration: Record<string, unknown>;
  /** Null: the reactor has no application (req.bt is null). */
  applicationId: string | null;
}

/** Validates a Create Reactor body (spec 4.2). The configuration is checked against the formula by the service. */
export function parseCreateReactor(body: unknown): ReactorInput & { formulaId: string } {
  const result = v.safeParse(CreateSchema, asObject(body));
  if (!result.success) throw validationFromIssues(result.issues);
  const { name, configuration, formula, application } = result.output;
  return { name, configuration, formulaId: formula.id, applicationId: application?.id ?? null };
}

/**
 * Validates an Update Reactor body (PUT, spec 4.2): name and configuration required; an absent
 * application removes it; the formula cannot change.
 */
export function parseUpdateReactor(body: unknown): ReactorInput {
  const record = asObject(body);
  if ('formula' in record) throw ValidationError.field('formula', 'cannot be changed; create a new reactor for another formula');
  const result = v.safeParse(UpdateSchema, record);
  if (!result.success) throw validationFromIssues(result.issues);
  const { name, configuration, application } = result.output;
  return { name, configuration, applicationId: application?.id ?? null };
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
    if (!names.has(key)) errors[`configuration.${key}`] = ['is not declared by the formula'];
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
  timeoutMs: number;
}

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const InvokeSchema = v.strictObject({
  args: v.nullish(v.unknown()),
  callback_url: v.nullish(v.unknown()),
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
 * Validates an Invoke Reactor body (spec 4.2). `timeout_ms` is range-checked though it only governs
 * asynchronous runs; `callback_url` (asynchronous invocation) is refused until it is available.
 */
export function parseInvoke(body: unknown): InvokeInput {
  const record = body === undefined || body === null ? {} : asObject(body);
  const result = v.safeParse(InvokeSchema, record);
  if (!result.success) throw validationFromIssues(result.issues);
  const { args, callback_url, timeout_ms } = result.output;
  if (callback_url !== undefined && callback_url !== null) {
    throw ValidationError.field('callback_url', 'asynchronous invocation is not available yet; invoke without callback_url');
  }
  if (args !== undefined && args !== null && (typeof args !== 'object' || Array.isArray(args))) {
    throw ValidationError.field('args', 'must be an object');
  }
  return { args: args ?? {}, timeoutMs: timeout_ms ?? TIMEOUT_MS.default };
}

function asObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw ValidationError.field('body', 'must be a JSON object');
  return body as Record<string, unknown>;
}
