import * as v from 'valibot';
import { RuleSchema } from '../applications/application-input.js';
import { TOKEN_PERMISSIONS } from '../auth/caller.js';
import { ValidationError } from '../errors/errors.js';
import { validationFromIssues } from '../validation/issues.js';
import { type AccessRule, PERMISSIONS, type Permission } from '../permissions/permissions.js';
import type { SessionGrants } from '../storage/store.js';
import { normalizeContainer } from '../auth/containers.js';
import { parseExpiresAt } from '../tokens/expiry.js';

/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const AuthorizeSchema = v.strictObject({
  nonce: v.pipe(v.string('must be a string'), v.minLength(1, 'is required'), v.maxLength(200, 'must be at most 200 characters')),
  permissions: v.optional(v.pipe(v.array(v.picklist(PERMISSIONS, 'is not a known permission')), v.minLength(1, 'must list at least one permission'))),
  rules: v.optional(v.pipe(v.array(RuleSchema), v.minLength(1, 'must hold at least one rule'), v.maxLength(100, 'must hold at most 100 rules'))),
  expires_at: v.optional(v.unknown()),
});

/** A parsed authorization: the nonce, the grants asked for, and an earlier expiry if one was asked for. */
export interface AuthorizeInput {
  nonce: string;
  grants: SessionGrants;
  expiresAt: number | null;
}

/**
 * Validates `POST /sessions/authorize`: `nonce`, exactly one of `permissions` (held on every
 * container, as an application without rules holds them) or `rules` (the session's permissions
 * are those its rules list), only token permissions, and an optional `expires_at` that may only
 * bring the expiry closer (at most `maxTtlMs` from now).
 */
export function parseAuthorizeSession(body: unknown, now: number, maxTtlMs: number): AuthorizeInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw ValidationError.field('body', 'must be a JSON object');
  const result = v.safeParse(AuthorizeSchema, body);
  if (!result.success) throw validationFromIssues(result.issues);
  const { nonce, permissions, rules, expires_at } = result.output;
  if ((permissions === undefined) === (rules === undefined)) {
    throw ValidationError.field('body', 'must give exactly one of permissions (held on every container) or rules');
  }
  const errors: Record<string, string[]> = {};
  const tokenOnly = (p: Permission, field: string) => {
    if (!TOKEN_PERMISSIONS.includes(p)) (errors[field] ??= []).push(`'${p}' cannot be given to a session; sessions hold token permissions only (${TOKEN_PERMISSIONS.join(', ')})`);
  };
  permissions?.forEach((p, i) => tokenOnly(p, `permissions[${i}]`));
  const normalized: AccessRule[] = (rules ?? []).map((rule, i) => {
    rule.permissions.forEach((p, j) => tokenOnly(p, `rules[${i}].permissions[${j}]`));
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
  let expiresAt: number | null = null;
  if (expires_at !== undefined && expires_at !== null) {
    try {
      expiresAt = parseExpiresAt(expires_at, now);
      if (expiresAt > now + maxTtlMs) (errors['expires_at'] ??= []).push(`can only bring the session's expiry closer: at most ${maxTtlMs / 1000} seconds from now`);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      Object.assign(errors, error.errors);
    }
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  const grants: SessionGrants =
    permissions !== undefined ? { permissions: [...new Set(permissions)], rules: [] } : { permissions: [...new Set(normalized.flatMap((r) => r.permissions))], rules: normalized };
  return { nonce, grants, expiresAt };
}

/** The Authorize Session body as a caller sends it (validated by the service). */
export type AuthorizeSessionRequest = v.InferInput<typeof AuthorizeSchema>;
