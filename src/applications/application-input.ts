import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';
import { validationFromIssues } from '../validation/issues.js';
import { type AccessRule, APPLICATION_TYPES, type ApplicationType, PERMISSIONS, PERMISSIONS_BY_TYPE, type Permission, TRANSFORMS } from '../permissions/permissions.js';
import { normalizeContainer } from '../auth/containers.js';
import { MAX_ORIGIN_LENGTH, ORIGIN_GRAMMAR, parseOrigin } from '../elements/origin.js';

/** An unknown permission's message lists the valid ones, so the fix is in the error. */
const UNKNOWN_PERMISSION = `is not a known permission; valid permissions: ${PERMISSIONS.join(', ')}`;

/**
 * One access rule as an application or a session authorization gives it (containers not yet
 * normalized). Exported for the OpenAPI document (src/http/openapi), which is generated from it.
 */
export const RuleSchema = v.strictObject({
  description: v.optional(v.pipe(v.string(), v.maxLength(500, 'must be at most 500 characters'))),
  priority: v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(0, 'must be at least 0')),
  container: v.string('must be a container path like /pci/high/'),
  transform: v.picklist(TRANSFORMS, `must be one of ${TRANSFORMS.join(', ')}`),
  permissions: v.pipe(v.array(v.picklist(PERMISSIONS, UNKNOWN_PERMISSION)), v.minLength(1, 'must list at least one permission')),
});

/**
 * A page origin as browsers send it (parseOrigin: the one grammar of origins), normalized
 * (lowercase, default port dropped). No wildcards: each origin is listed.
 */
const Origin = v.pipe(
  v.string('must be a string'),
  v.maxLength(MAX_ORIGIN_LENGTH, `must be at most ${MAX_ORIGIN_LENGTH} characters`),
  v.check((value) => parseOrigin(value) !== null, `must be an origin: ${ORIGIN_GRAMMAR}`),
  v.transform((value) => parseOrigin(value)!),
);

const AllowedOrigins = v.pipe(v.array(Origin, 'must be an array of origins'), v.maxLength(50, 'must hold at most 50 origins'));

const Name = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'is required'), v.maxLength(200, 'must be at most 200 characters'));

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const CreateSchema = v.strictObject({
  name: Name,
  type: v.picklist(APPLICATION_TYPES, `must be one of ${APPLICATION_TYPES.join(', ')}`),
  permissions: v.optional(v.array(v.picklist(PERMISSIONS, UNKNOWN_PERMISSION))),
  rules: v.optional(v.pipe(v.array(RuleSchema), v.maxLength(100, 'must hold at most 100 rules'))),
  allowed_origins: v.optional(AllowedOrigins),
});

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const UpdateSchema = v.strictObject({
  name: Name,
  permissions: v.optional(v.array(v.picklist(PERMISSIONS, UNKNOWN_PERMISSION))),
  rules: v.optional(v.pipe(v.array(RuleSchema), v.maxLength(100, 'must hold at most 100 rules'))),
  allowed_origins: v.optional(AllowedOrigins),
});

export interface ApplicationInput {
  name: string;
  type: ApplicationType;
  permissions: Permission[];
  rules: AccessRule[];
  /** Page origins for browser elements (public applications only); [] is any. */
  allowedOrigins: string[];
}

/** Validates a create body: the type bounds the permissions it may hold, in the app and in its rules. */
export function parseCreateApplication(body: unknown): ApplicationInput {
  const result = v.safeParse(CreateSchema, asObject(body));
  if (!result.success) throw validationFromIssues(result.issues, { schema: CreateSchema });
  const { type, name, permissions, rules, allowed_origins } = result.output;
  return checkAgainstType(type, name, permissions ?? [], rules ?? [], allowed_origins ?? []);
}

/**
 * Validates an update body (PUT) against the application it replaces: name required; `permissions`
 * and `rules` replace the current ones when given and are kept when left out (an empty array clears
 * them), so a client that only renames never wipes an application's grants; the type cannot change.
 */
export function parseUpdateApplication(
  body: unknown,
  current: Pick<ApplicationInput, 'type' | 'permissions' | 'rules'> & { allowedOrigins?: string[] },
): Omit<ApplicationInput, 'type'> {
  const record = asObject(body);
  if ('type' in record) throw ValidationError.field('type', 'cannot be changed; create a new application instead');
  const result = v.safeParse(UpdateSchema, record);
  if (!result.success) throw validationFromIssues(result.issues, { schema: UpdateSchema });
  const { name, permissions, rules, allowed_origins } = result.output;
  return checkAgainstType(
    current.type,
    name,
    permissions ?? [...current.permissions],
    rules ?? current.rules.map((r) => ({ ...r, permissions: [...r.permissions] })),
    allowed_origins ?? [...(current.allowedOrigins ?? [])],
  );
}

function checkAgainstType(type: ApplicationType, name: string, permissions: Permission[], rules: v.InferOutput<typeof RuleSchema>[], allowedOrigins: string[]): ApplicationInput {
  const allowed = PERMISSIONS_BY_TYPE[type];
  const errors: Record<string, string[]> = {};
  // Only a public application's key is meant for browsers (docs/elements.md).
  if (allowedOrigins.length > 0 && type !== 'public') errors['allowed_origins'] = [`may only be set on a public application, not a ${type} one`];
  permissions.forEach((p, i) => {
    if (!allowed.includes(p)) (errors[`permissions[${i}]`] ??= []).push(`'${p}' may not be held by a ${type} application`);
  });
  const normalized: AccessRule[] = rules.map((rule, i) => {
    rule.permissions.forEach((p, j) => {
      if (!allowed.includes(p)) (errors[`rules[${i}].permissions[${j}]`] ??= []).push(`'${p}' may not be held by a ${type} application`);
    });
    let container = rule.container;
    try {
      container = normalizeContainer(rule.container, `rules[${i}].container`);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      Object.assign(errors, error.errors);
    }
    const out: AccessRule = { priority: rule.priority, container, transform: rule.transform, permissions: [...new Set(rule.permissions)] };
    if (rule.description !== undefined) out.description = rule.description;
    return out;
  });
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  return { name, type, permissions: [...new Set(permissions)], rules: normalized, allowedOrigins: [...new Set(allowedOrigins)] };
}

function asObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw ValidationError.field('body', 'must be a JSON object');
  return body as Record<string, unknown>;
}

/** The Create Application body as a caller sends it (validated by the service). */
export type CreateApplicationRequest = v.InferInput<typeof CreateSchema>;
/** The Update (PUT) Application body as a caller sends it. */
export type UpdateApplicationRequest = v.InferInput<typeof UpdateSchema>;
