import { createHash } from 'node:crypto';
import type {
  ApplicationKeyRecord,
  ApplicationRecord,
  AuditEntry,
  FormulaRecord,
  IdempotencyRecord,
  PageRequest,
  ReactorRecord,
  Store,
  StoredToken,
  TokenFilter,
} from '../storage/store.js';

/** Fixtures of the Store conformance suite, exported for store authors' own tests. */

export const TENANT_A = '0a0a0a0a-0000-4000-8000-00000000000a';
export const TENANT_B = '0b0b0b0b-0000-4000-8000-00000000000b';
export const APP_A = 'a1a1a1a1-0000-4000-8000-0000000000a1';
export const APP_B = 'b1b1b1b1-0000-4000-8000-0000000000b1';
/** The suite's "now": 2030-01-01T00:00:00Z. */
export const T0 = Date.UTC(2030, 0, 1);
export const HOUR = 3_600_000;
export const EXPIRY_ACTOR = 'system:expiry';

let counter = 0;
const nextId = (prefix: string) => `${prefix}-${++counter}`;

/** A valid StoredToken of tenant A (ciphertext is a plain Uint8Array, not a Buffer), with overrides. */
export function makeToken(overrides: Partial<StoredToken> = {}): StoredToken {
  const id = overrides.id ?? nextId('tok');
  return {
    tenantId: TENANT_A,
    id,
    type: 'token',
    ciphertext: new TextEncoder().encode(`ciphertext of ${id}`),
    keyVersion: 1,
    fingerprint: `fp-${id}`,
    fingerprintExpression: '{{ data | stringify }}',
    mask: null,
    containers: ['/general/high/'],
    metadata: {},
    searchIndexes: [],
    searchHashes: [],
    deduplicate: false,
    createdBy: APP_A,
    createdAt: T0,
    modifiedBy: null,
    modifiedAt: null,
    expiresAt: null,
    cvcPurgeAt: null,
    ...overrides,
  };
}

/** An audit entry of tenant A, with overrides. */
export function makeAudit(overrides: Partial<AuditEntry> = {}): AuditEntry {
  return { tenantId: TENANT_A, actor: APP_A, operation: 'token:create', resourceId: null, outcome: 'success', detail: null, at: T0, ...overrides };
}

/** An application of tenant A, with overrides. */
export function makeApplication(overrides: Partial<ApplicationRecord> = {}): ApplicationRecord {
  const id = overrides.id ?? nextId('app');
  return {
    id,
    tenantId: TENANT_A,
    name: `Application ${id}`,
    type: 'private',
    permissions: ['token:create', 'token:read'],
    rules: [{ description: 'all', priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] }],
    createdBy: null,
    createdAt: T0,
    modifiedBy: null,
    modifiedAt: null,
    credentialsGeneration: 0,
    allowedOrigins: [],
    ...overrides,
  };
}

/** A key of an application (its tenant and id), with overrides. */
export function makeApplicationKey(app: Pick<ApplicationRecord, 'tenantId' | 'id'>, overrides: Partial<ApplicationKeyRecord> = {}): ApplicationKeyRecord {
  const id = overrides.id ?? nextId('key');
  const keyHash = overrides.keyHash ?? createHash('sha256').update(`key ${id} of ${app.tenantId}/${app.id}`).digest('hex');
  return { id, tenantId: app.tenantId, applicationId: app.id, keyHash, keyLookup: keyHash.slice(0, 16), createdBy: null, createdAt: T0, grants: null, ...overrides };
}

/** A reactor formula of tenant A, with overrides. */
export function makeFormula(overrides: Partial<FormulaRecord> = {}): FormulaRecord {
  return {
    id: overrides.id ?? nextId('formula'),
    tenantId: TENANT_A,
    name: 'Charge',
    description: 'Charges a card',
    code: 'module.exports = async (req) => ({ raw: req.args });',
    configuration: [{ name: 'API_KEY', description: null, type: 'string' }],
    requestParameters: [{ name: 'card.number', description: 'the card', type: 'string', optional: false }],
    createdBy: APP_A,
    createdAt: T0,
    modifiedBy: null,
    modifiedAt: null,
    ...overrides,
  };
}

/** A reactor of tenant A (its formula id must be created separately; null with inline `code`), with overrides. */
export function makeReactor(overrides: Partial<ReactorRecord> & { formulaId: string | null }): ReactorRecord {
  return {
    id: overrides.id ?? nextId('reactor'),
    tenantId: TENANT_A,
    name: 'My reactor',
    code: null,
    configuration: { API_KEY: 'not-a-secret' },
    applicationId: null,
    boundGrants: null,
    createdBy: APP_A,
    createdAt: T0,
    modifiedBy: null,
    modifiedAt: null,
    ...overrides,
  };
}

/** An in-flight idempotency record of tenant A and APP_A, expiring a day after T0, with overrides. */
export function makeIdempotency(overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    tenantId: TENANT_A,
    applicationId: APP_A,
    key: overrides.key ?? nextId('idem'),
    requestHash: 'hash-1',
    state: 'in_flight',
    status: null,
    body: null,
    createdAt: T0,
    expiresAt: T0 + 24 * HOUR,
    withdrawAt: null,
    ...overrides,
  };
}

/** A token with its ciphertext as hex, for deep equality whatever byte container the store returns. */
export function plain(token: StoredToken): Omit<StoredToken, 'ciphertext'> & { ciphertext: string } {
  return { ...token, ciphertext: Buffer.from(token.ciphertext).toString('hex') };
}

export const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
export const cursor = (size: number, start?: string): PageRequest => (start === undefined ? { mode: 'cursor', size } : { mode: 'cursor', size, start });
export const offset = (size: number, page: number): PageRequest => ({ mode: 'offset', size, page });

/** Token helpers of the conformance parts, on the store of the running test. */
export function tokenHelpers(current: () => Store) {
  const create = async (token: StoredToken, now = T0) => current().createToken(token, now);
  const createAll = async (tokens: StoredToken[], now = T0) => {
    for (const token of tokens) {
      const result = await create(token, now);
      if (result.status !== 'created') throw new Error(`fixture token '${token.id}' was not created: ${result.status}`);
    }
    return tokens;
  };
  const update = async (next: StoredToken, now = T0) =>
    current().updateToken(next, makeAudit({ tenantId: next.tenantId, operation: 'token:update', resourceId: next.id, at: now }), now);
  const remove = async (tenantId: string, id: string, now = T0, by = APP_A) =>
    current().deleteToken(tenantId, id, by, makeAudit({ tenantId, actor: by, operation: 'token:delete', resourceId: id, at: now }), now);
  /** Every matching token id, following cursors (small pages, to exercise paging). */
  const listIds = async (filter: TokenFilter = {}, now = T0, tenantId = TENANT_A) => {
    const ids: string[] = [];
    let start: string | undefined;
    for (let pages = 0; pages < 1000; pages++) {
      const result = await current().listTokens(tenantId, filter, cursor(3, start), now);
      if (result.mode !== 'cursor') throw new Error('expected a cursor page');
      ids.push(...result.items.map((t) => t.id));
      if (result.next === null) return ids;
      start = result.next;
    }
    throw new Error('cursor paging did not end');
  };
  const auditOf = async (tenantId: string, resourceId: string) => {
    const result = await current().listAudit(tenantId, { resourceId }, offset(100, 1));
    return result.items;
  };
  return { create, createAll, update, remove, listIds, auditOf };
}
