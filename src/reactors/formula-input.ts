import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';
import { validationFromIssues } from '../validation/issues.js';
import { MAX_CODE_BYTES } from '../sandbox/sandbox.js';
import type { FormulaRecord } from '../storage/store.js';

/** Limits on a formula's declarations (docs/reactors.md; these keep them bounded). */
export const FORMULA_LIMITS = Object.freeze({
  nameLength: 200,
  descriptionLength: 1000,
  declarationNameLength: 200,
  declarations: 100,
  codeBytes: MAX_CODE_BYTES,
});

const L = FORMULA_LIMITS;

const Name = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'is required'), v.maxLength(L.nameLength, `must be at most ${L.nameLength} characters`));
const Description = v.nullish(v.pipe(v.string('must be a string'), v.maxLength(L.descriptionLength, `must be at most ${L.descriptionLength} characters`)));
/** Reactor code (a formula's, or a reactor's inline code): a non-empty string of at most 256 KB. */
export const CodeSchema = v.pipe(
  v.string('must be a string of JavaScript'),
  v.check((code) => code.trim().length > 0, 'is required'),
  v.check((code) => Buffer.byteLength(code, 'utf8') <= L.codeBytes, `must be at most ${L.codeBytes / 1024} KB`),
);
const DeclarationName = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'is required'),
  v.maxLength(L.declarationNameLength, `must be at most ${L.declarationNameLength} characters`),
);
const ParameterName = v.pipe(
  DeclarationName,
  v.check((name) => name.split('.').every((segment) => segment.length > 0), "must be dot-separated names without empty parts (e.g. 'card.number')"),
);

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const ConfigurationEntry = v.strictObject({
  name: DeclarationName,
  description: Description,
  type: v.picklist(['string', 'number', 'boolean'], 'must be one of string, number, boolean'),
});
/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const RequestParameter = v.strictObject({
  name: ParameterName,
  description: Description,
  type: v.picklist(['string', 'number', 'boolean', 'object', 'array'], 'must be one of string, number, boolean, object, array'),
  optional: v.optional(v.boolean('must be a boolean'), false),
});

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const FormulaSchema = v.strictObject({
  // The Basis Theory SDK sends the formula's type: here every formula is the tenant's own.
  type: v.nullish(v.picklist(['private'], "must be 'private' (official formulas belong to the hosted service; a tenant's formulas are private)")),
  name: Name,
  description: Description,
  code: CodeSchema,
  configuration: v.nullish(v.pipe(v.array(ConfigurationEntry, 'must be an array'), v.maxLength(L.declarations, `must have at most ${L.declarations} entries`))),
  request_parameters: v.nullish(v.pipe(v.array(RequestParameter, 'must be an array'), v.maxLength(L.declarations, `must have at most ${L.declarations} entries`))),
});

/** A validated formula body: what create and update (PUT) store. */
export type FormulaInput = Pick<FormulaRecord, 'name' | 'description' | 'code' | 'configuration' | 'requestParameters'>;

/**
 * Validates a formula body (create, or update with PUT semantics: absent optional fields are cleared).
 * Names must be unique within each list; a parameter nested under another (`a.b` under `a`) needs the
 * parent to be declared as an object, if it is declared. The code is not compiled here (the service
 * does it with the sandbox).
 */
export function parseFormulaInput(body: unknown): FormulaInput {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw ValidationError.field('body', 'must be a JSON object');
  const result = v.safeParse(FormulaSchema, body);
  if (!result.success) throw validationFromIssues(result.issues, { schema: FormulaSchema });
  const { name, description, code, configuration, request_parameters } = result.output;
  const errors: Record<string, string[]> = {};
  duplicates(configuration ?? [], 'configuration', errors);
  duplicates(request_parameters ?? [], 'request_parameters', errors);
  const types = new Map((request_parameters ?? []).map((p) => [p.name, p.type]));
  (request_parameters ?? []).forEach((parameter, i) => {
    const segments = parameter.name.split('.');
    for (let n = 1; n < segments.length; n++) {
      const parent = segments.slice(0, n).join('.');
      const type = types.get(parent);
      if (type !== undefined && type !== 'object') {
        (errors[`request_parameters[${i}].name`] ??= []).push(`is nested under '${parent}', which is declared as ${type}, not object`);
      }
    }
  });
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  return {
    name,
    description: description ?? null,
    code,
    configuration: (configuration ?? []).map((c) => ({ name: c.name, description: c.description ?? null, type: c.type })),
    requestParameters: (request_parameters ?? []).map((p) => ({ name: p.name, description: p.description ?? null, type: p.type, optional: p.optional })),
  };
}

function duplicates(entries: readonly { name: string }[], field: string, errors: Record<string, string[]>): void {
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    if (seen.has(entry.name)) (errors[`${field}[${i}].name`] ??= []).push(`duplicates the name '${entry.name}'`);
    seen.add(entry.name);
  });
}

/** The Create or Update Reactor Formula body as a caller sends it (validated by the service). */
export type FormulaRequest = v.InferInput<typeof FormulaSchema>;
