import type { ExpressionBudget } from '../expressions/budget.js';
import type { ExpressionEngine } from '../expressions/engine.js';
import type { Transform } from '../permissions/permissions.js';
import type { StoredToken } from '../storage/store.js';
import { formatIso } from '../common/time.js';

/** A token as the API returns it (snake_case, docs/tokens.md). Which optional fields appear depends on the operation. */
export interface TokenView {
  id: string;
  type: string;
  tenant_id: string;
  data?: unknown;
  mask?: unknown;
  fingerprint?: string;
  fingerprint_expression?: string;
  /** Absent only from a duplicate the caller may not read (identity only). */
  containers?: string[];
  metadata?: Record<string, string>;
  search_indexes?: string[];
  created_by?: string;
  created_at?: string;
  modified_by?: string;
  modified_at?: string;
  expires_at?: string;
  _extras?: { deduplicated: boolean };
}

/**
 * Applies an access-control transform to decrypted data. `undefined` means the response carries no
 * data. A mask renders within the call's expression budget when one is given.
 */
export function transformData(engine: ExpressionEngine, transform: Transform, token: Pick<StoredToken, 'mask'>, data: unknown, budget?: ExpressionBudget): unknown {
  switch (transform) {
    case 'reveal':
      return data;
    case 'mask':
      // A token without a mask shows nothing when masked (ARCHITECTURE.md, Token types).
      if (token.mask === null || token.mask === undefined) return undefined;
      return withoutAbsentFields(token.mask, engine.renderTree(token.mask, { data }, 'mask', budget), data);
    case 'redact':
      return undefined;
  }
}

/**
 * Leaves out of a rendered mask each top-level field whose expression rendered null because the
 * data has no such field: a card created without an expiry shows `{ number }`, not
 * `{ number, expiration_month: null, expiration_year: null }`. Fields the data holds (even as null)
 * and literal values in the mask are kept. Says nothing new: null already told the field is absent.
 */
function withoutAbsentFields(mask: unknown, rendered: unknown, data: unknown): unknown {
  if (!isRecord(rendered) || !isRecord(mask) || !isRecord(data)) return rendered;
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(rendered)) {
    if (rendered[key] !== null || typeof mask[key] !== 'string' || Object.hasOwn(data, key)) continue;
    out ??= { ...rendered };
    delete out[key];
  }
  return out ?? rendered;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The stricter of two transforms (reveal < mask < redact). */
export function stricter(a: Transform, b: Transform): Transform {
  return STRICTNESS[a] >= STRICTNESS[b] ? a : b;
}
const STRICTNESS: Readonly<Record<Transform, number>> = { reveal: 0, mask: 1, redact: 2 };

/**
 * The view of a stored token. `echo` adds what create/update responses echo (docs/tokens.md):
 * mask, search_indexes and fingerprint_expression. `fingerprint` is set only for callers whose
 * token:read transform on the token is reveal: over low-entropy data (a cvc, a PIN, a birth date)
 * a fingerprint is an equality oracle, so it discloses as much as the data (ARCHITECTURE.md, Disclosure).
 */
export function tokenView(token: StoredToken, data: unknown, echo: boolean, fingerprint: boolean): TokenView {
  const view = { id: token.id, type: token.type, tenant_id: token.tenantId } as TokenView;
  if (data !== undefined) view.data = data;
  if (echo && token.mask !== null) view.mask = token.mask;
  if (fingerprint && token.fingerprint !== null) view.fingerprint = token.fingerprint;
  if (echo && token.fingerprintExpression !== null) view.fingerprint_expression = token.fingerprintExpression;
  view.containers = token.containers;
  view.metadata = token.metadata;
  if (echo) view.search_indexes = token.searchIndexes;
  view.created_by = token.createdBy;
  view.created_at = formatIso(token.createdAt);
  if (token.modifiedBy !== null) view.modified_by = token.modifiedBy;
  if (token.modifiedAt !== null) view.modified_at = formatIso(token.modifiedAt);
  if (token.expiresAt !== null) view.expires_at = formatIso(token.expiresAt);
  return view;
}

/**
 * The answer to an update by a caller without token:read on the token: its identity only. The
 * caller may write the token, not read it, so not its metadata, containers or expressions either
 * (else `PATCH {}` would read them).
 */
export function identityView(token: StoredToken): TokenView {
  return { id: token.id, type: token.type, tenant_id: token.tenantId };
}

/** Removes a card's cvc once its one-hour lifetime is over, even before the sweep has run. */
export function withoutExpiredCvc(token: StoredToken, data: unknown, now: number): unknown {
  if (token.cvcPurgeAt !== null && now < token.cvcPurgeAt) return data;
  if (data === null || typeof data !== 'object' || Array.isArray(data) || !('cvc' in data)) return data;
  const { cvc: _removed, ...rest } = data as Record<string, unknown>;
  return rest;
}
