import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { runJobConformance } from './job-conformance.js';
import { credentialsConformance } from './credentials-conformance.js';
import { describeWebhookStore } from './webhook-store-conformance.js';
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

/*
 * The Store conformance suite: every guarantee stated in src/storage/store.ts, run against any
 * implementation through the Store interface only. A store is correct when this suite passes.
 */

export const TENANT_A = '0a0a0a0a-0000-4000-8000-00000000000a';
export const TENANT_B = '0b0b0b0b-0000-4000-8000-00000000000b';
export const APP_A = 'a1a1a1a1-0000-4000-8000-0000000000a1';
export const APP_B = 'b1b1b1b1-0000-4000-8000-0000000000b1';
/** The suite's "now": 2030-01-01T00:00:00Z. */
export const T0 = Date.UTC(2030, 0, 1);
const HOUR = 3_600_000;
const EXPIRY_ACTOR = 'system:expiry';

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
    ...overrides,
  };
}

/** A key of an application (its tenant and id), with overrides. */
export function makeApplicationKey(app: Pick<ApplicationRecord, 'tenantId' | 'id'>, overrides: Partial<ApplicationKeyRecord> = {}): ApplicationKeyRecord {
  const id = overrides.id ?? nextId('key');
  const keyHash = overrides.keyHash ?? createHash('sha256').update(`key ${id} of ${app.tenantId}/${app.id}`).digest('hex');
  return { id, tenantId: app.tenantId, applicationId: app.id, keyHash, keyLookup: keyHash.slice(0, 16), createdBy: null, createdAt: T0, ...overrides };
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
function plain(token: StoredToken): Omit<StoredToken, 'ciphertext'> & { ciphertext: string } {
  return { ...token, ciphertext: Buffer.from(token.ciphertext).toString('hex') };
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const cursor = (size: number, start?: string): PageRequest => (start === undefined ? { mode: 'cursor', size } : { mode: 'cursor', size, start });
const offset = (size: number, page: number): PageRequest => ({ mode: 'offset', size, page });

/**
 * Registers the Store conformance suite with vitest.
 * @param name Shown in the suite title.
 * @param factory Returns a fresh, empty store (migrated or not: the suite calls `migrate()`).
 * @param cleanup Runs after each test instead of `store.close()` (e.g. to close and delete a file).
 * @example
 * runStoreConformance('sqlite :memory:', () => createSqliteStore());
 */
export function runStoreConformance(name: string, factory: () => Store | Promise<Store>, cleanup?: (store: Store) => void | Promise<void>): void {
  runJobConformance(name, factory, cleanup);
  describe(`Store conformance: ${name}`, () => {
    let store: Store;

    beforeEach(async () => {
      store = await factory();
      await store.migrate();
      await store.createTenant({ id: TENANT_A, name: 'Tenant A', createdAt: T0 });
      await store.createTenant({ id: TENANT_B, name: 'Tenant B', createdAt: T0 + 1 });
    });

    afterEach(async () => {
      if (cleanup) await cleanup(store);
      else await store.close();
    });

    credentialsConformance(() => store);

    const create = async (token: StoredToken, now = T0) => store.createToken(token, now);
    const createAll = async (tokens: StoredToken[], now = T0) => {
      for (const token of tokens) expect(await create(token, now)).toEqual({ status: 'created' });
      return tokens;
    };
    const update = async (next: StoredToken, now = T0) =>
      store.updateToken(next, makeAudit({ tenantId: next.tenantId, operation: 'token:update', resourceId: next.id, at: now }), now);
    const remove = async (tenantId: string, id: string, now = T0, by = APP_A) =>
      store.deleteToken(tenantId, id, by, makeAudit({ tenantId, actor: by, operation: 'token:delete', resourceId: id, at: now }), now);
    /** Every matching token id, following cursors (small pages, to exercise paging). */
    const listIds = async (filter: TokenFilter = {}, now = T0, tenantId = TENANT_A) => {
      const ids: string[] = [];
      let start: string | undefined;
      for (let pages = 0; pages < 1000; pages++) {
        const result = await store.listTokens(tenantId, filter, cursor(3, start), now);
        if (result.mode !== 'cursor') throw new Error('expected a cursor page');
        ids.push(...result.items.map((t) => t.id));
        if (result.next === null) return ids;
        start = result.next;
      }
      throw new Error('cursor paging did not end');
    };
    const auditOf = async (tenantId: string, resourceId: string) => {
      const result = await store.listAudit(tenantId, { resourceId }, offset(100, 1));
      return result.items;
    };

    describe('migrations and tenants', () => {
      it('migrate() is idempotent and keeps data', async () => {
        const token = makeToken();
        await createAll([token]);
        await store.migrate();
        await store.migrate();
        expect(await store.getToken(TENANT_A, token.id, T0)).not.toBeNull();
      });

      it('creates, gets and lists tenants; an unknown tenant is null', async () => {
        expect(await store.getTenant(TENANT_A)).toEqual({ id: TENANT_A, name: 'Tenant A', createdAt: T0 });
        expect(await store.getTenant('no-such-tenant')).toBeNull();
        expect((await store.listTenants()).map((t) => t.id)).toEqual([TENANT_A, TENANT_B]);
      });

      it("answers 'exists' for a second tenant with the same id, and writes nothing", async () => {
        expect(await store.createTenant({ id: TENANT_A, name: 'again', createdAt: T0 })).toBe('exists');
        expect((await store.getTenant(TENANT_A))?.name).toBe('Tenant A');
      });
    });

    describe('wrapped keys', () => {
      const key = (overrides: Partial<{ tenantId: string; purpose: 'data' | 'index'; version: number; wrapped: Uint8Array }>) => ({
        tenantId: TENANT_A,
        purpose: 'data' as const,
        version: 1,
        wrapped: new Uint8Array([1, 2, 3]),
        createdAt: T0,
        ...overrides,
      });

      it('inserts once per (tenant, purpose, version): the first writer wins, the second gets false', async () => {
        expect(await store.insertWrappedKey(key({ wrapped: new Uint8Array([1]) }))).toBe(true);
        expect(await store.insertWrappedKey(key({ wrapped: new Uint8Array([2]) }))).toBe(false);
        const keys = await store.listWrappedKeys(TENANT_A, 'data');
        expect(keys).toHaveLength(1);
        expect(hex(keys[0]!.wrapped)).toBe('01');
      });

      it('lists by tenant and purpose, ascending by version', async () => {
        await store.insertWrappedKey(key({ version: 3, wrapped: Buffer.from([3]) }));
        await store.insertWrappedKey(key({ version: 1, wrapped: new Uint8Array([1]) }));
        await store.insertWrappedKey(key({ version: 2, wrapped: new Uint8Array([2]) }));
        await store.insertWrappedKey(key({ purpose: 'index', version: 1, wrapped: new Uint8Array([9]) }));
        await store.insertWrappedKey(key({ tenantId: TENANT_B, version: 1, wrapped: new Uint8Array([7]) }));
        const data = await store.listWrappedKeys(TENANT_A, 'data');
        expect(data.map((k) => [k.version, hex(k.wrapped), k.purpose, k.tenantId, k.createdAt])).toEqual([
          [1, '01', 'data', TENANT_A, T0],
          [2, '02', 'data', TENANT_A, T0],
          [3, '03', 'data', TENANT_A, T0],
        ]);
        expect((await store.listWrappedKeys(TENANT_A, 'index')).map((k) => hex(k.wrapped))).toEqual(['09']);
        expect((await store.listWrappedKeys(TENANT_B, 'data')).map((k) => hex(k.wrapped))).toEqual(['07']);
        expect(await store.listWrappedKeys(TENANT_B, 'index')).toEqual([]);
      });

      it('lets exactly one of many concurrent writers of a version win', async () => {
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => Promise.resolve().then(() => store.insertWrappedKey(key({ version: 5, wrapped: new Uint8Array([i]) })))),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.listWrappedKeys(TENANT_A, 'data')).toHaveLength(1);
      });
    });

    describe('tokens: create and get', () => {
      it('round-trips every field; ciphertext comes back as a Uint8Array with the same bytes', async () => {
        const token = makeToken({
          type: 'card',
          mask: { number: '{{ data.number | reveal_last: 4 }}', expiration_month: '{{ data.expiration_month }}' },
          containers: ['/pci/high/', '/pci/low/'],
          metadata: { Customer: 'Alice', plan: 'Gold' },
          searchIndexes: ['{{ data.number | last4 }}'],
          searchHashes: ['h-1', 'h-2'],
          deduplicate: true,
          keyVersion: 3,
          expiresAt: T0 + 10 * HOUR,
          cvcPurgeAt: T0 + HOUR,
          modifiedBy: APP_B,
          modifiedAt: T0 + 5,
        });
        expect(await create(token)).toEqual({ status: 'created' });
        const got = await store.getToken(TENANT_A, token.id, T0);
        expect(got).not.toBeNull();
        expect(got!.ciphertext).toBeInstanceOf(Uint8Array);
        expect(plain(got!)).toEqual(plain(token));
      });

      it('round-trips null fields and non-object masks', async () => {
        const nulls = makeToken({ fingerprint: null, fingerprintExpression: null, mask: null });
        const arrayMask = makeToken({ mask: ['{{ data | last4 }}', 1, true, null] });
        const stringMask = makeToken({ mask: '{{ data | last4 }}' });
        await createAll([nulls, arrayMask, stringMask]);
        for (const token of [nulls, arrayMask, stringMask]) expect(plain((await store.getToken(TENANT_A, token.id, T0))!)).toEqual(plain(token));
      });

      it('accepts a Buffer ciphertext as well as a Uint8Array', async () => {
        const token = makeToken({ ciphertext: Buffer.from('buffer ciphertext') });
        await createAll([token]);
        expect(hex((await store.getToken(TENANT_A, token.id, T0))!.ciphertext)).toBe(hex(Buffer.from('buffer ciphertext')));
      });

      it('returns null for an unknown id and for another tenant\'s token', async () => {
        const b = makeToken({ tenantId: TENANT_B });
        await createAll([b]);
        expect(await store.getToken(TENANT_A, 'no-such-token', T0)).toBeNull();
        expect(await store.getToken(TENANT_A, b.id, T0)).toBeNull();
        expect(await store.getToken(TENANT_B, b.id, T0)).not.toBeNull();
      });

      it('keeps ids per tenant: the same id in two tenants is two tokens', async () => {
        const a = makeToken({ id: 'shared-id', ciphertext: new Uint8Array([0xa]) });
        const b = makeToken({ id: 'shared-id', tenantId: TENANT_B, ciphertext: new Uint8Array([0xb]) });
        await createAll([a, b]);
        expect(hex((await store.getToken(TENANT_A, 'shared-id', T0))!.ciphertext)).toBe('0a');
        expect(hex((await store.getToken(TENANT_B, 'shared-id', T0))!.ciphertext)).toBe('0b');
      });

      it('writes no audit entry (the service audits creations in batches); a taken id writes nothing', async () => {
        const token = makeToken({ id: 'unaudited' });
        expect(await store.createToken(token, T0)).toEqual({ status: 'created' });
        expect(await store.getToken(TENANT_A, 'unaudited', T0)).not.toBeNull();
        expect(await auditOf(TENANT_A, 'unaudited')).toEqual([]);
        expect(await store.createToken(makeToken({ id: 'unaudited', ciphertext: new Uint8Array([7]) }), T0)).toEqual({ status: 'id_conflict' });
        expect(hex((await store.getToken(TENANT_A, 'unaudited', T0))!.ciphertext)).toBe(hex(token.ciphertext));
        await store.deleteToken(TENANT_A, 'unaudited', APP_A, makeAudit({ resourceId: 'unaudited' }), T0);
        expect(await store.createToken(makeToken({ id: 'unaudited' }), T0)).toEqual({ status: 'id_conflict' });
      });
    });

    describe('tokens: create conflicts and deduplication', () => {
      it('returns id_conflict for a live token\'s id and writes nothing', async () => {
        const first = makeToken({ id: 'taken' });
        await createAll([first]);
        expect(await create(makeToken({ id: 'taken', ciphertext: new Uint8Array([9]) }))).toEqual({ status: 'id_conflict' });
        expect(hex((await store.getToken(TENANT_A, 'taken', T0))!.ciphertext)).toBe(hex(first.ciphertext));
        expect(await auditOf(TENANT_A, 'taken')).toEqual([]);
      });

      it('returns id_conflict for an expired token not yet swept', async () => {
        await createAll([makeToken({ id: 'expired', expiresAt: T0 + 1 })]);
        expect(await create(makeToken({ id: 'expired' }), T0 + 2)).toEqual({ status: 'id_conflict' });
      });

      it('never reuses the id of a deleted token', async () => {
        await createAll([makeToken({ id: 'gone' })]);
        expect(await remove(TENANT_A, 'gone')).toBe(true);
        expect(await create(makeToken({ id: 'gone' }))).toEqual({ status: 'id_conflict' });
        expect(await store.getToken(TENANT_A, 'gone', T0)).toBeNull();
      });

      it('never reuses the id of a deleted token among concurrent creations (one batch)', async () => {
        await createAll([makeToken({ id: 'gone-in-batch' })]);
        expect(await remove(TENANT_A, 'gone-in-batch')).toBe(true);
        const results = await Promise.all(
          ['fresh-1', 'gone-in-batch', 'fresh-2'].map((id) => store.createToken(makeToken({ id }), T0)),
        );
        expect(results).toEqual([{ status: 'created' }, { status: 'id_conflict' }, { status: 'created' }]);
        expect(await store.getToken(TENANT_A, 'gone-in-batch', T0)).toBeNull();
        expect(await store.getToken(TENANT_A, 'fresh-2', T0)).not.toBeNull();
      });

      it('never reuses the id of a purged token', async () => {
        await createAll([makeToken({ id: 'purged', expiresAt: T0 + 1 })]);
        expect((await store.purgeExpiredTokens(T0 + 1, 10)).length).toBe(1);
        expect(await create(makeToken({ id: 'purged' }), T0 + 2)).toEqual({ status: 'id_conflict' });
      });

      it('a deleted id of another tenant does not conflict', async () => {
        await createAll([makeToken({ id: 'other', tenantId: TENANT_B })]);
        await remove(TENANT_B, 'other');
        expect(await create(makeToken({ id: 'other' }))).toEqual({ status: 'created' });
      });

      it('returns the live token of the same tenant, type and fingerprint as a duplicate and writes nothing', async () => {
        const original = makeToken({ fingerprint: 'same', type: 'card' });
        await createAll([original]);
        const again = makeToken({ fingerprint: 'same', type: 'card', deduplicate: true });
        const result = await create(again);
        expect(result.status).toBe('duplicate');
        if (result.status !== 'duplicate') return;
        expect(plain(result.existing)).toEqual(plain(original));
        expect(await store.getToken(TENANT_A, again.id, T0)).toBeNull();
        expect(await auditOf(TENANT_A, again.id)).toEqual([]);
      });

      it('checks for a duplicate before the id: same id and fingerprint with deduplicate is a duplicate', async () => {
        await createAll([makeToken({ id: 'dup-id', fingerprint: 'fp-dup' })]);
        const result = await create(makeToken({ id: 'dup-id', fingerprint: 'fp-dup', deduplicate: true }));
        expect(result.status).toBe('duplicate');
      });

      it('does not deduplicate without the flag, across types, across tenants, against expired tokens, or on a null fingerprint', async () => {
        await createAll([
          makeToken({ fingerprint: 'f', type: 'card' }),
          makeToken({ fingerprint: 'g', type: 'card', expiresAt: T0 + 1 }),
          makeToken({ fingerprint: null, deduplicate: true }),
        ]);
        const later = T0 + 1;
        expect(await create(makeToken({ fingerprint: 'f', type: 'card', deduplicate: false }), later)).toEqual({ status: 'created' });
        expect(await create(makeToken({ fingerprint: 'f', type: 'bank', deduplicate: true }), later)).toEqual({ status: 'created' });
        expect(await create(makeToken({ fingerprint: 'f', type: 'card', deduplicate: true, tenantId: TENANT_B }), later)).toEqual({ status: 'created' });
        expect(await create(makeToken({ fingerprint: 'g', type: 'card', deduplicate: true }), later)).toEqual({ status: 'created' });
        expect(await create(makeToken({ fingerprint: null, deduplicate: true }), later)).toEqual({ status: 'created' });
      });
    });

    describe('tokens: update', () => {
      it('replaces the mutable fields, keeps the creation stamp, and writes the audit entry', async () => {
        const original = makeToken({ metadata: { color: 'red' }, searchHashes: ['old-hash'], containers: ['/a/'] });
        await createAll([original]);
        const next: StoredToken = {
          ...original,
          ciphertext: new Uint8Array([1, 2, 3]),
          keyVersion: 2,
          fingerprint: 'new-fp',
          fingerprintExpression: '{{ data.x }}',
          mask: { x: '{{ data.x | last4 }}' },
          containers: ['/b/'],
          metadata: { size: 'L' },
          searchIndexes: ['{{ data.x }}'],
          searchHashes: ['new-hash'],
          deduplicate: true,
          modifiedBy: APP_B,
          modifiedAt: T0 + 10,
          expiresAt: T0 + HOUR,
          cvcPurgeAt: T0 + 2 * HOUR,
          createdBy: 'someone-else',
          createdAt: T0 + 999,
        };
        expect(await update(next, T0 + 10)).toEqual({ status: 'updated' });
        const got = await store.getToken(TENANT_A, original.id, T0 + 10);
        expect(plain(got!)).toEqual(plain({ ...next, createdBy: original.createdBy, createdAt: original.createdAt }));
        expect((await auditOf(TENANT_A, original.id)).map((e) => e.operation)).toEqual(['token:update']);
      });

      it('replaces the metadata, search hashes and fingerprint used by filters', async () => {
        const original = makeToken({ metadata: { color: 'red' }, searchHashes: ['old-hash'], fingerprint: 'old-fp', containers: ['/a/'] });
        await createAll([original]);
        await update({ ...original, metadata: { color: 'blue' }, searchHashes: ['new-hash'], fingerprint: 'new-fp', containers: ['/b/'] });
        expect(await listIds({ metadata: { color: 'red' } })).toEqual([]);
        expect(await listIds({ metadata: { color: 'blue' } })).toEqual([original.id]);
        expect(await listIds({ searchHashes: ['old-hash'] })).toEqual([]);
        expect(await listIds({ searchHashes: ['new-hash'] })).toEqual([original.id]);
        expect(await listIds({ fingerprints: ['old-fp'] })).toEqual([]);
        expect(await listIds({ fingerprints: ['new-fp'] })).toEqual([original.id]);
        expect(await listIds({ containers: ['/a/'] })).toEqual([]);
        expect(await listIds({ containers: ['/b/'] })).toEqual([original.id]);
      });

      it('returns not_found for an unknown id, another tenant\'s token and an expired token, writing nothing', async () => {
        const b = makeToken({ tenantId: TENANT_B });
        const expiring = makeToken({ expiresAt: T0 + 1 });
        await createAll([b, expiring]);
        expect(await update(makeToken({ id: 'nope' }))).toEqual({ status: 'not_found' });
        expect(await update({ ...b, tenantId: TENANT_A, ciphertext: new Uint8Array([7]) })).toEqual({ status: 'not_found' });
        expect(hex((await store.getToken(TENANT_B, b.id, T0))!.ciphertext)).toBe(hex(b.ciphertext));
        expect(await update({ ...expiring, expiresAt: null, ciphertext: new Uint8Array([7]) }, T0 + 1)).toEqual({ status: 'not_found' });
        expect(plain((await store.getToken(TENANT_A, expiring.id, T0))!)).toEqual(plain(expiring));
        expect(await store.getToken(TENANT_A, 'nope', T0)).toBeNull();
      });

      it('returns another live token with the new fingerprint as a duplicate and writes nothing', async () => {
        const other = makeToken({ fingerprint: 'taken-fp', type: 'card' });
        const mine = makeToken({ fingerprint: 'mine', type: 'card' });
        await createAll([other, mine]);
        const result = await update({ ...mine, fingerprint: 'taken-fp', deduplicate: true, ciphertext: new Uint8Array([5]) });
        expect(result.status).toBe('duplicate');
        if (result.status !== 'duplicate') return;
        expect(result.existing.id).toBe(other.id);
        expect(plain((await store.getToken(TENANT_A, mine.id, T0))!)).toEqual(plain(mine));
        // An update that found a duplicate writes nothing, its audit entry included.
        expect(await auditOf(TENANT_A, mine.id)).toEqual([]);
      });

      it('probes for a duplicate only when the update changes the fingerprint or turns deduplication on', async () => {
        const other = makeToken({ fingerprint: 'shared', type: 'card' });
        const mine = makeToken({ fingerprint: 'shared', type: 'card', deduplicate: true });
        // Created in this order (mine first), both hold the fingerprint although mine deduplicates.
        await createAll([mine, other]);
        expect(await update({ ...mine, metadata: { k: 'v' } })).toEqual({ status: 'updated' });
        expect((await store.getToken(TENANT_A, mine.id, T0))!.metadata).toEqual({ k: 'v' });
        const plainOne = makeToken({ fingerprint: 'shared', type: 'card' });
        await createAll([plainOne]);
        const turnedOn = await update({ ...plainOne, deduplicate: true });
        expect(turnedOn.status).toBe('duplicate');
      });

      it('does not count the token itself, expired tokens, other types or other tenants as duplicates', async () => {
        const mine = makeToken({ fingerprint: 'fp-x', type: 'card' });
        await createAll([
          mine,
          makeToken({ fingerprint: 'fp-expired', type: 'card', expiresAt: T0 + 1 }),
          makeToken({ fingerprint: 'fp-bank', type: 'bank' }),
          makeToken({ fingerprint: 'fp-b', type: 'card', tenantId: TENANT_B }),
        ]);
        const later = T0 + 1;
        expect(await update({ ...mine, deduplicate: true }, later)).toEqual({ status: 'updated' });
        for (const fingerprint of ['fp-expired', 'fp-bank', 'fp-b']) {
          expect(await update({ ...mine, fingerprint, deduplicate: true }, later)).toEqual({ status: 'updated' });
        }
        expect(await update({ ...mine, fingerprint: 'fp-bank', deduplicate: false }, later)).toEqual({ status: 'updated' });
      });
    });

    describe('tokens: delete', () => {
      it('removes the token, leaves a reference record and writes the audit entry', async () => {
        const token = makeToken({ type: 'card', metadata: { k: 'v' }, searchHashes: ['h'], fingerprint: 'f' });
        await createAll([token]);
        expect(await remove(TENANT_A, token.id, T0 + 5, APP_B)).toBe(true);
        expect(await store.getToken(TENANT_A, token.id, T0 + 5)).toBeNull();
        expect(await store.getDeletedToken(TENANT_A, token.id)).toEqual({ tenantId: TENANT_A, id: token.id, type: 'card', deletedAt: T0 + 5, deletedBy: APP_B });
        for (const filter of [{}, { metadata: { k: 'v' } }, { searchHashes: ['h'] }, { fingerprints: ['f'] }, { ids: [token.id] }, { types: ['card'] }]) {
          expect(await listIds(filter, T0 + 5)).toEqual([]);
        }
        expect(await store.listTokensBelowKeyVersion(TENANT_A, 99, 10)).toEqual([]);
        expect((await auditOf(TENANT_A, token.id)).map((e) => [e.operation, e.actor])).toEqual([['token:delete', APP_B]]);
      });

      it('returns false for an unknown, already deleted or expired token, and for another tenant\'s token', async () => {
        const b = makeToken({ tenantId: TENANT_B });
        const expiring = makeToken({ expiresAt: T0 + 1 });
        const once = makeToken();
        await createAll([b, expiring, once]);
        expect(await remove(TENANT_A, 'nope')).toBe(false);
        expect(await remove(TENANT_A, once.id)).toBe(true);
        expect(await remove(TENANT_A, once.id)).toBe(false);
        expect(await remove(TENANT_A, expiring.id, T0 + 1)).toBe(false);
        expect(await store.getDeletedToken(TENANT_A, expiring.id)).toBeNull();
        expect(await remove(TENANT_A, b.id)).toBe(false);
        expect(await store.getToken(TENANT_B, b.id, T0)).not.toBeNull();
        expect(await store.getDeletedToken(TENANT_A, b.id)).toBeNull();
        expect(await store.getDeletedToken(TENANT_B, b.id)).toBeNull();
      });

      it('keeps reference records per tenant', async () => {
        await createAll([makeToken({ id: 'ref', tenantId: TENANT_B })]);
        await remove(TENANT_B, 'ref');
        expect(await store.getDeletedToken(TENANT_A, 'ref')).toBeNull();
        expect((await store.getDeletedToken(TENANT_B, 'ref'))?.tenantId).toBe(TENANT_B);
      });
    });

    describe('tokens: expiry', () => {
      it('a token is live until expiresAt and invisible from then on, to get, list, filters, update and delete', async () => {
        const token = makeToken({ expiresAt: T0 + HOUR, metadata: { k: 'v' }, type: 'card', fingerprint: 'ef', searchHashes: ['eh'] });
        await createAll([token]);
        const before = T0 + HOUR - 1;
        const at = T0 + HOUR;
        expect(await store.getToken(TENANT_A, token.id, before)).not.toBeNull();
        expect(await listIds({}, before)).toEqual([token.id]);
        expect(await store.getToken(TENANT_A, token.id, at)).toBeNull();
        for (const filter of [{}, { metadata: { k: 'v' } }, { types: ['card'] }, { ids: [token.id] }, { fingerprints: ['ef'] }, { searchHashes: ['eh'] }, { containers: token.containers }]) {
          expect(await listIds(filter, at)).toEqual([]);
        }
        expect(await store.listTokens(TENANT_A, {}, offset(10, 1), at)).toEqual({ mode: 'offset', items: [], totalItems: 0 });
        expect(await update({ ...token, expiresAt: null }, at)).toEqual({ status: 'not_found' });
        expect(await remove(TENANT_A, token.id, at)).toBe(false);
      });

      it('purgeExpiredTokens removes tokens (any tenant) with expiresAt <= now, leaving references and audit entries', async () => {
        const a = makeToken({ expiresAt: T0 + 10, type: 'card', metadata: { k: 'v' } });
        const b = makeToken({ expiresAt: T0 + 20, tenantId: TENANT_B });
        const later = makeToken({ expiresAt: T0 + 21 });
        const never = makeToken();
        await createAll([a, b, later, never]);
        expect(await store.purgeExpiredTokens(T0 + 20, 100)).toEqual([
          { tenantId: TENANT_A, id: a.id, type: 'card', expiresAt: T0 + 10 },
          { tenantId: TENANT_B, id: b.id, type: 'token', expiresAt: T0 + 20 },
        ]);
        expect(await store.getDeletedToken(TENANT_A, a.id)).toEqual({ tenantId: TENANT_A, id: a.id, type: 'card', deletedAt: T0 + 20, deletedBy: EXPIRY_ACTOR });
        expect(await store.getDeletedToken(TENANT_B, b.id)).toEqual({ tenantId: TENANT_B, id: b.id, type: 'token', deletedAt: T0 + 20, deletedBy: EXPIRY_ACTOR });
        const entries = await auditOf(TENANT_A, a.id);
        expect(entries.at(-1)).toMatchObject({ tenantId: TENANT_A, actor: EXPIRY_ACTOR, operation: 'token:delete', resourceId: a.id, outcome: 'success', at: T0 + 20 });
        expect((await auditOf(TENANT_B, b.id)).at(-1)).toMatchObject({ actor: EXPIRY_ACTOR, resourceId: b.id });
        // The data is gone, not just hidden: nothing finds it at any time, not even key-version scans.
        expect(await store.getToken(TENANT_A, a.id, T0)).toBeNull();
        expect(await listIds({ metadata: { k: 'v' } }, T0)).toEqual([]);
        expect((await store.listTokensBelowKeyVersion(TENANT_A, 99, 10)).map((t) => t.id).sort()).toEqual([later.id, never.id].sort());
        expect(await store.getToken(TENANT_A, later.id, T0 + 20)).not.toBeNull();
        expect(await store.getDeletedToken(TENANT_A, never.id)).toBeNull();
        expect((await store.purgeExpiredTokens(T0 + 20, 100)).length).toBe(0);
      });

      it('purgeExpiredTokens removes at most `limit` per call', async () => {
        await createAll(Array.from({ length: 5 }, (_, i) => makeToken({ expiresAt: T0 + i + 1 })));
        expect((await store.purgeExpiredTokens(T0 + 100, 2)).length).toBe(2);
        expect((await store.purgeExpiredTokens(T0 + 100, 2)).length).toBe(2);
        expect((await store.purgeExpiredTokens(T0 + 100, 2)).length).toBe(1);
        expect((await store.purgeExpiredTokens(T0 + 100, 2)).length).toBe(0);
      });

      it('concurrent purges remove each token once', async () => {
        await createAll(Array.from({ length: 6 }, () => makeToken({ expiresAt: T0 + 1 })));
        const removed = await Promise.all(Array.from({ length: 4 }, () => Promise.resolve().then(() => store.purgeExpiredTokens(T0 + 1, 2))));
        const ids = removed.flat().map((t) => t.id);
        expect(ids).toHaveLength(6);
        expect(new Set(ids).size).toBe(6);
      });
    });

    describe('tokens: cvc removal', () => {
      it('lists tokens of any tenant whose cvcPurgeAt is due, oldest first, up to the limit', async () => {
        const first = makeToken({ cvcPurgeAt: T0 + 1 });
        const second = makeToken({ cvcPurgeAt: T0 + 2, tenantId: TENANT_B });
        const third = makeToken({ cvcPurgeAt: T0 + 3 });
        const future = makeToken({ cvcPurgeAt: T0 + HOUR });
        const none = makeToken();
        await createAll([third, future, none, second, first]);
        expect((await store.listCvcDue(T0 + 3, 10)).map((t) => t.id)).toEqual([first.id, second.id, third.id]);
        expect((await store.listCvcDue(T0 + 3, 2)).map((t) => t.id)).toEqual([first.id, second.id]);
        expect(await store.listCvcDue(T0, 10)).toEqual([]);
        const [due] = await store.listCvcDue(T0 + 1, 1);
        expect(plain(due!)).toEqual(plain(first));
      });

      it('replaceCiphertext writes only when the ciphertext is still the expected one', async () => {
        const token = makeToken({ cvcPurgeAt: T0 + 1 });
        await createAll([token]);
        const next = { ciphertext: new Uint8Array([0xc0, 0xff, 0xee]), keyVersion: 2, cvcPurgeAt: null };
        expect(await store.replaceCiphertext(TENANT_A, token.id, new Uint8Array([0xde, 0xad]), next)).toBe(false);
        let got = await store.getToken(TENANT_A, token.id, T0);
        expect([hex(got!.ciphertext), got!.keyVersion, got!.cvcPurgeAt]).toEqual([hex(token.ciphertext), 1, T0 + 1]);
        expect(await store.replaceCiphertext(TENANT_A, token.id, token.ciphertext, next)).toBe(true);
        got = await store.getToken(TENANT_A, token.id, T0);
        expect([hex(got!.ciphertext), got!.keyVersion, got!.cvcPurgeAt]).toEqual(['c0ffee', 2, null]);
        expect(await store.listCvcDue(T0 + 10, 10)).toEqual([]);
        // The old ciphertext is now stale.
        expect(await store.replaceCiphertext(TENANT_A, token.id, token.ciphertext, { ...next, ciphertext: new Uint8Array([1]) })).toBe(false);
      });

      it('replaceCiphertext loses to a concurrent update, and cannot reach another tenant', async () => {
        const token = makeToken({ cvcPurgeAt: T0 + 1 });
        await createAll([token]);
        const [due] = await store.listCvcDue(T0 + 1, 10);
        await update({ ...token, ciphertext: new Uint8Array([0x42]), cvcPurgeAt: null, modifiedAt: T0 + 1, modifiedBy: APP_A });
        expect(await store.replaceCiphertext(TENANT_A, token.id, due!.ciphertext, { ciphertext: new Uint8Array([0]), keyVersion: 1, cvcPurgeAt: null })).toBe(false);
        expect(hex((await store.getToken(TENANT_A, token.id, T0))!.ciphertext)).toBe('42');
        expect(await store.replaceCiphertext(TENANT_B, token.id, new Uint8Array([0x42]), { ciphertext: new Uint8Array([0]), keyVersion: 1, cvcPurgeAt: null })).toBe(false);
        expect(hex((await store.getToken(TENANT_A, token.id, T0))!.ciphertext)).toBe('42');
      });

      it('exactly one of many concurrent compare-and-sets with the same expected value wins', async () => {
        const token = makeToken();
        await createAll([token]);
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            Promise.resolve().then(() => store.replaceCiphertext(TENANT_A, token.id, token.ciphertext, { ciphertext: new Uint8Array([i]), keyVersion: 2, cvcPurgeAt: null })),
          ),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
      });
    });

    describe('tokens: key versions', () => {
      it('counts and lists a tenant\'s tokens below a key version, expired ones included', async () => {
        const v1 = makeToken({ keyVersion: 1 });
        const v1expired = makeToken({ keyVersion: 1, expiresAt: T0 + 1 });
        const v2 = makeToken({ keyVersion: 2 });
        const v3 = makeToken({ keyVersion: 3 });
        await createAll([v1, v1expired, v2, v3, makeToken({ keyVersion: 1, tenantId: TENANT_B })]);
        expect(await store.countTokensBelowKeyVersion(TENANT_A, 3)).toBe(3);
        expect(await store.countTokensBelowKeyVersion(TENANT_A, 2)).toBe(2);
        expect(await store.countTokensBelowKeyVersion(TENANT_A, 1)).toBe(0);
        expect(await store.countTokensBelowKeyVersion(TENANT_B, 3)).toBe(1);
        expect((await store.listTokensBelowKeyVersion(TENANT_A, 3, 10)).map((t) => t.id).sort()).toEqual([v1.id, v1expired.id, v2.id].sort());
        expect(await store.listTokensBelowKeyVersion(TENANT_A, 3, 2)).toHaveLength(2);
        expect(await store.listTokensBelowKeyVersion(TENANT_A, 1, 10)).toEqual([]);
        const [listed] = await store.listTokensBelowKeyVersion(TENANT_A, 2, 10);
        expect(plain(listed!)).toEqual(plain(v1));
      });

      it('a re-encryption loop (list a batch, compare-and-set each, repeat) reaches every token once', async () => {
        const tokens = await createAll(Array.from({ length: 7 }, (_, i) => makeToken({ keyVersion: 1 + (i % 2) })));
        const rewritten: string[] = [];
        for (let rounds = 0; rounds < 20; rounds++) {
          const batch = await store.listTokensBelowKeyVersion(TENANT_A, 3, 2);
          if (batch.length === 0) break;
          for (const token of batch) {
            expect(await store.replaceCiphertext(TENANT_A, token.id, token.ciphertext, { ciphertext: new Uint8Array([3]), keyVersion: 3, cvcPurgeAt: null })).toBe(true);
            rewritten.push(token.id);
          }
        }
        expect(rewritten.sort()).toEqual(tokens.map((t) => t.id).sort());
        expect(await store.countTokensBelowKeyVersion(TENANT_A, 3)).toBe(0);
        // A token written later under an old version is still found.
        const late = makeToken({ keyVersion: 1 });
        await createAll([late]);
        expect((await store.listTokensBelowKeyVersion(TENANT_A, 3, 10)).map((t) => t.id)).toEqual([late.id]);
      });
    });

    describe('tokens: listing and paging', () => {
      const ORDER = ['e', 'c', 'a', 'd', 'b'];

      it('lists live tokens in creation order (not id order)', async () => {
        await createAll(ORDER.map((id) => makeToken({ id })));
        expect(await listIds()).toEqual(ORDER);
        const all = await store.listTokens(TENANT_A, {}, cursor(10), T0);
        expect(all.items.map((t) => t.id)).toEqual(ORDER);
        expect(plain(all.items[0]!)).toEqual(plain((await store.getToken(TENANT_A, 'e', T0))!));
      });

      it('pages with cursors: next is a string until the last page, null on it', async () => {
        await createAll(ORDER.map((id) => makeToken({ id })));
        const one = await store.listTokens(TENANT_A, {}, cursor(2), T0);
        if (one.mode !== 'cursor') throw new Error('cursor mode expected');
        expect(one.items.map((t) => t.id)).toEqual(['e', 'c']);
        expect(typeof one.next).toBe('string');
        const two = await store.listTokens(TENANT_A, {}, cursor(2, one.next!), T0);
        if (two.mode !== 'cursor') throw new Error('cursor mode expected');
        expect(two.items.map((t) => t.id)).toEqual(['a', 'd']);
        const three = await store.listTokens(TENANT_A, {}, cursor(2, two.next!), T0);
        expect(three).toMatchObject({ mode: 'cursor', next: null });
        expect(three.items.map((t) => t.id)).toEqual(['b']);
      });

      it('returns next null on a page that ends exactly at the last token', async () => {
        await createAll(['w', 'x', 'y', 'z'].map((id) => makeToken({ id })));
        const one = await store.listTokens(TENANT_A, {}, cursor(2), T0);
        if (one.mode !== 'cursor') throw new Error('cursor mode expected');
        expect(one.next).not.toBeNull();
        const two = await store.listTokens(TENANT_A, {}, cursor(2, one.next!), T0);
        expect(two).toMatchObject({ mode: 'cursor', next: null });
        expect(two.items.map((t) => t.id)).toEqual(['y', 'z']);
        const exact = await store.listTokens(TENANT_A, {}, cursor(4), T0);
        expect(exact).toMatchObject({ mode: 'cursor', next: null });
        expect(exact.items).toHaveLength(4);
      });

      it('returns an empty page with next null, or totalItems 0, when nothing matches', async () => {
        expect(await store.listTokens(TENANT_A, {}, cursor(5), T0)).toEqual({ mode: 'cursor', items: [], next: null });
        expect(await store.listTokens(TENANT_A, {}, offset(5, 1), T0)).toEqual({ mode: 'offset', items: [], totalItems: 0 });
        await createAll([makeToken({ tenantId: TENANT_B })]);
        expect(await store.listTokens(TENANT_A, {}, cursor(5), T0)).toEqual({ mode: 'cursor', items: [], next: null });
      });

      it('pages by offset with totalItems, including pages past the end', async () => {
        await createAll(ORDER.map((id) => makeToken({ id })));
        await createAll([makeToken({ tenantId: TENANT_B })]);
        const pages = [];
        for (const page of [1, 2, 3, 4]) pages.push(await store.listTokens(TENANT_A, {}, offset(2, page), T0));
        expect(pages.map((p) => p.items.map((t) => t.id))).toEqual([['e', 'c'], ['a', 'd'], ['b'], []]);
        expect(pages.map((p) => (p.mode === 'offset' ? p.totalItems : -1))).toEqual([5, 5, 5, 5]);
      });

      it('a cursor keeps its place: tokens created meanwhile come later, deleted ones are skipped, none twice', async () => {
        await createAll(['p1', 'p2', 'p3'].map((id) => makeToken({ id })));
        const one = await store.listTokens(TENANT_A, {}, cursor(2), T0);
        if (one.mode !== 'cursor') throw new Error('cursor mode expected');
        await createAll(['p4', 'p5'].map((id) => makeToken({ id })));
        await remove(TENANT_A, 'p3');
        const seen = one.items.map((t) => t.id);
        let start = one.next;
        while (start !== null) {
          const page = await store.listTokens(TENANT_A, {}, cursor(2, start), T0);
          if (page.mode !== 'cursor') throw new Error('cursor mode expected');
          seen.push(...page.items.map((t) => t.id));
          start = page.next;
        }
        expect(seen).toEqual(['p1', 'p2', 'p4', 'p5']);
      });

      it('rejects a cursor it did not issue with ValidationError on start', async () => {
        await createAll([makeToken()]);
        for (const start of ['%%%', 'not a cursor!', '@@@@']) {
          const attempt = Promise.resolve().then(() => store.listTokens(TENANT_A, {}, cursor(2, start), T0));
          await expect(attempt).rejects.toBeInstanceOf(ValidationError);
          await expect(attempt).rejects.toMatchObject({ errors: { start: expect.any(Array) } });
        }
      });
    });

    describe('tokens: filters', () => {
      it('filters by ids (several, one, unknown, another tenant\'s), in creation order', async () => {
        const [x, y, z] = await createAll([makeToken(), makeToken(), makeToken()]);
        const b = makeToken({ tenantId: TENANT_B });
        await createAll([b]);
        expect(await listIds({ ids: [z!.id, x!.id, 'unknown', b.id] })).toEqual([x!.id, z!.id]);
        expect(await listIds({ ids: [y!.id] })).toEqual([y!.id]);
        expect(await listIds({ ids: [b.id] })).toEqual([]);
      });

      it('filters by types', async () => {
        const [card, bank] = await createAll([makeToken({ type: 'card' }), makeToken({ type: 'bank' }), makeToken({ type: 'token' })]);
        await createAll([makeToken({ type: 'card', tenantId: TENANT_B })]);
        expect(await listIds({ types: ['card'] })).toEqual([card!.id]);
        expect(await listIds({ types: ['bank', 'card'] })).toEqual([card!.id, bank!.id]);
        expect(await listIds({ types: ['ssn'] })).toEqual([]);
      });

      it('filters by metadata: keys and values case-insensitively and exactly, several keys ANDed', async () => {
        const [alice, aliceGold, bob] = await createAll([
          makeToken({ metadata: { Customer: 'Alice' } }),
          makeToken({ metadata: { customer: 'ALICE', Plan: 'Gold' } }),
          makeToken({ metadata: { customer: 'Bob', plan: 'gold' } }),
        ]);
        await createAll([makeToken({ tenantId: TENANT_B, metadata: { customer: 'alice' } })]);
        expect(await listIds({ metadata: { CUSTOMER: 'alice' } })).toEqual([alice!.id, aliceGold!.id]);
        expect(await listIds({ metadata: { customer: 'alice', plan: 'GOLD' } })).toEqual([aliceGold!.id]);
        expect(await listIds({ metadata: { plan: 'gold' } })).toEqual([aliceGold!.id, bob!.id]);
        expect(await listIds({ metadata: { customer: 'ali' } })).toEqual([]);
        expect(await listIds({ metadata: { customer: 'alice%' } })).toEqual([]);
        expect(await listIds({ metadata: { custom: 'alice' } })).toEqual([]);
        expect(await listIds({ metadata: { customer: 'bob', plan: 'silver' } })).toEqual([]);
      });

      it('filters by containers: a token matches when it has every one of them, exactly', async () => {
        const [pci, both, bank] = await createAll([
          makeToken({ containers: ['/pci/high/'] }),
          makeToken({ containers: ['/pci/low/', '/bank/high/'] }),
          makeToken({ containers: ['/bank/high/'] }),
        ]);
        await createAll([makeToken({ tenantId: TENANT_B, containers: ['/pci/high/'] })]);
        expect(await listIds({ containers: ['/pci/high/'] })).toEqual([pci!.id]);
        expect(await listIds({ containers: ['/bank/high/'] })).toEqual([both!.id, bank!.id]);
        expect(await listIds({ containers: ['/bank/high/', '/pci/low/'] })).toEqual([both!.id]);
        expect(await listIds({ containers: ['/pci/high/', '/bank/high/'] })).toEqual([]);
        expect(await listIds({ containers: ['/pci/'] })).toEqual([]);
      });

      it('filters by access scopes: every container of a token must lie under a prefix and under none of its exceptions', async () => {
        const [pciHigh, pciLow, mixed, bank, under] = await createAll([
          makeToken({ containers: ['/pci/high/'] }),
          makeToken({ containers: ['/pci/low/'] }),
          makeToken({ containers: ['/pci/high/', '/bank/high/'] }),
          makeToken({ containers: ['/bank/high/'] }),
          makeToken({ containers: ['/pci_x/'] }),
        ]);
        await createAll([makeToken({ tenantId: TENANT_B, containers: ['/pci/high/'] })]);
        const scope = (prefix: string, except: string[] = []) => ({ prefix, except });
        expect(await listIds({ within: [scope('/')] })).toEqual([pciHigh!.id, pciLow!.id, mixed!.id, bank!.id, under!.id]);
        // A prefix is a whole-segment ancestor: '/pci/' is not a prefix of '/pci_x/' ('_' is no wildcard).
        expect(await listIds({ within: [scope('/pci/')] })).toEqual([pciHigh!.id, pciLow!.id]);
        expect(await listIds({ within: [scope('/pci/', ['/pci/low/'])] })).toEqual([pciHigh!.id]);
        expect(await listIds({ within: [scope('/pci/high/'), scope('/bank/')] })).toEqual([pciHigh!.id, mixed!.id, bank!.id]);
        expect(await listIds({ within: [scope('/', ['/bank/'])] })).toEqual([pciHigh!.id, pciLow!.id, under!.id]);
        expect(await listIds({ within: [] })).toEqual([]);
        // ANDed with the other filters, and counted exactly in offset mode.
        expect(await listIds({ within: [scope('/pci/')], containers: ['/pci/low/'] })).toEqual([pciLow!.id]);
        const counted = await store.listTokens(TENANT_A, { within: [scope('/bank/'), scope('/pci/high/')] }, offset(1, 1), T0);
        expect(counted).toMatchObject({ mode: 'offset', totalItems: 3 });
        expect(counted.items.map((t) => t.id)).toEqual([pciHigh!.id]);
      });

      it('filters by fingerprints', async () => {
        const [f1, f2, f1again] = await createAll([makeToken({ fingerprint: 'f1' }), makeToken({ fingerprint: 'f2' }), makeToken({ fingerprint: 'f1', type: 'card' })]);
        await createAll([makeToken({ tenantId: TENANT_B, fingerprint: 'f1' }), makeToken({ fingerprint: null })]);
        expect(await listIds({ fingerprints: ['f1'] })).toEqual([f1!.id, f1again!.id]);
        expect(await listIds({ fingerprints: ['f2', 'f1'] })).toEqual([f1!.id, f2!.id, f1again!.id]);
        expect(await listIds({ fingerprints: ['f1'] }, T0, TENANT_B)).toHaveLength(1);
      });

      it('filters by search hashes: every hash must be among the token\'s (AND)', async () => {
        const [ab, a, abc] = await createAll([
          makeToken({ searchHashes: ['ha', 'hb'] }),
          makeToken({ searchHashes: ['ha'] }),
          makeToken({ searchHashes: ['ha', 'hb', 'hc'] }),
        ]);
        await createAll([makeToken({ tenantId: TENANT_B, searchHashes: ['ha', 'hb'] })]);
        expect(await listIds({ searchHashes: ['ha'] })).toEqual([ab!.id, a!.id, abc!.id]);
        expect(await listIds({ searchHashes: ['hb', 'ha'] })).toEqual([ab!.id, abc!.id]);
        expect(await listIds({ searchHashes: ['hc', 'ha', 'hb'] })).toEqual([abc!.id]);
        expect(await listIds({ searchHashes: ['hz'] })).toEqual([]);
      });

      it('ANDs different filters', async () => {
        const [match] = await createAll([
          makeToken({ type: 'card', metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprint: 'fp' }),
          makeToken({ type: 'bank', metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprint: 'fp' }),
          makeToken({ type: 'card', metadata: { k: 'w' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprint: 'fp' }),
          makeToken({ type: 'card', metadata: { k: 'v' }, containers: ['/pci/low/'], searchHashes: ['h'], fingerprint: 'fp' }),
          makeToken({ type: 'card', metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['x'], fingerprint: 'fp' }),
          makeToken({ type: 'card', metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprint: 'other' }),
        ]);
        const filter: TokenFilter = { types: ['card'], metadata: { k: 'v' }, containers: ['/pci/high/'], searchHashes: ['h'], fingerprints: ['fp'] };
        expect(await listIds(filter)).toEqual([match!.id]);
        expect(await listIds({ ...filter, ids: [match!.id, 'other'] })).toEqual([match!.id]);
        expect(await listIds({ ...filter, ids: ['other'] })).toEqual([]);
        expect(await store.listTokens(TENANT_A, { types: ['card'], metadata: { k: 'v' } }, offset(10, 1), T0)).toMatchObject({ totalItems: 4 });
      });

      it('an empty list matches nothing; an empty metadata map or hash list constrains nothing', async () => {
        const [token] = await createAll([makeToken({ type: 'card', fingerprint: 'f' })]);
        for (const filter of [{ ids: [] }, { types: [] }, { containers: [] }, { fingerprints: [] }] as TokenFilter[]) {
          expect(await listIds(filter)).toEqual([]);
        }
        expect(await listIds({ metadata: {}, searchHashes: [] })).toEqual([token!.id]);
      });

      it('pages through filtered results in both modes', async () => {
        const tokens = await createAll(Array.from({ length: 7 }, (_, i) => makeToken({ metadata: { group: i % 2 === 0 ? 'even' : 'odd' }, type: 'card' })));
        const even = tokens.filter((_, i) => i % 2 === 0).map((t) => t.id);
        expect(await listIds({ metadata: { group: 'even' } })).toEqual(even);
        expect(await listIds({ metadata: { group: 'even' }, types: ['card'] })).toEqual(even);
        const second = await store.listTokens(TENANT_A, { metadata: { group: 'even' } }, offset(3, 2), T0);
        expect(second).toMatchObject({ mode: 'offset', totalItems: 4 });
        expect(second.items.map((t) => t.id)).toEqual(even.slice(3));
      });
    });

    describe('applications', () => {
      const createApp = (app: ApplicationRecord) => Promise.resolve().then(() => store.createApplication(app, makeApplicationKey(app)));

      it("creates and gets an application; a duplicate id answers 'exists'", async () => {
        const app = makeApplication();
        await createApp(app);
        expect(await store.getApplication(TENANT_A, app.id)).toEqual(app);
        expect(await createApp({ ...app, name: 'again' })).toBe('exists');
        expect((await store.getApplication(TENANT_A, app.id))?.name).toBe(app.name);
      });

      it('is scoped by tenant: never read, changed or removed through another tenant', async () => {
        const b = makeApplication({ tenantId: TENANT_B });
        await createApp(b);
        expect(await store.getApplication(TENANT_A, b.id)).toBeNull();
        expect(await store.updateApplication(TENANT_A, b.id, { name: 'hijacked', modifiedBy: APP_A, modifiedAt: T0 })).toEqual({ status: 'not_found' });
        expect(await store.deleteApplication(TENANT_A, b.id)).toBe('not_found');
        expect(await store.getApplication(TENANT_B, b.id)).toEqual(b);
        expect((await store.listApplications(TENANT_A, cursor(10))).items).toEqual([]);
      });

      it('finds application keys, with their application, by key lookup across tenants', async () => {
        const a = makeApplication();
        const b = makeApplication({ tenantId: TENANT_B });
        const other = makeApplication();
        const keyA = makeApplicationKey(a, { keyHash: 'aaaabbbbccccdddd'.padEnd(64, '1') });
        const keyB = makeApplicationKey(b, { keyHash: 'aaaabbbbccccdddd'.padEnd(64, '2') });
        await store.createApplication(a, keyA);
        await store.createApplication(b, keyB);
        await createApp(other);
        const found = await store.findApplicationKeys('aaaabbbbccccdddd');
        expect(found.sort((x, y) => x.key.keyHash.localeCompare(y.key.keyHash))).toEqual([
          { key: keyA, application: a },
          { key: keyB, application: b },
        ]);
        expect(await store.findApplicationKeys('ffffffffffffffff')).toEqual([]);
      });

      it('creates nothing when the application id exists (the key is not added either)', async () => {
        const app = makeApplication();
        await createApp(app);
        const stray = makeApplicationKey(app);
        expect(await store.createApplication({ ...app, name: 'again' }, stray)).toBe('exists');
        expect(await store.getApplicationKey(TENANT_A, app.id, stray.id)).toBeNull();
        expect(await store.findApplicationKeys(stray.keyLookup)).toEqual([]);
      });

      it('lists in creation order with both paging modes', async () => {
        const apps = ['m', 'k', 'z'].map((id) => makeApplication({ id }));
        for (const app of apps) await createApp(app);
        const one = await store.listApplications(TENANT_A, cursor(2));
        if (one.mode !== 'cursor') throw new Error('cursor mode expected');
        expect(one.items).toEqual(apps.slice(0, 2));
        const two = await store.listApplications(TENANT_A, cursor(2, one.next!));
        expect(two).toEqual({ mode: 'cursor', items: apps.slice(2), next: null });
        expect(await store.listApplications(TENANT_A, offset(2, 2))).toEqual({ mode: 'offset', items: apps.slice(2), totalItems: 3 });
      });

      it('updates everything but the identity and creation stamp; false when missing', async () => {
        const app = makeApplication({ createdBy: APP_B });
        await createApp(app);
        const changes = { name: 'Renamed', permissions: ['token:read' as const], rules: [], modifiedBy: APP_B, modifiedAt: T0 + 1 };
        const next: ApplicationRecord = { ...app, ...changes };
        expect(await store.updateApplication(TENANT_A, app.id, changes)).toEqual({ status: 'updated', record: next });
        expect(await store.getApplication(TENANT_A, app.id)).toEqual(next);
        expect(await store.updateApplication(TENANT_A, 'missing', { name: 'x', modifiedBy: null, modifiedAt: T0 })).toEqual({ status: 'not_found' });
        expect(await store.getApplication(TENANT_A, 'missing')).toBeNull();
      });

      it('deletes once, with its keys', async () => {
        const app = makeApplication();
        const key = makeApplicationKey(app);
        await store.createApplication(app, key);
        expect(await store.deleteApplication(TENANT_A, app.id)).toBe('deleted');
        expect(await store.getApplication(TENANT_A, app.id)).toBeNull();
        expect(await store.deleteApplication(TENANT_A, app.id)).toBe('not_found');
        expect(await store.findApplicationKeys(key.keyLookup)).toEqual([]);
        expect(await store.listApplicationKeys(TENANT_A, app.id)).toEqual([]);
      });

      const ADMIN: ApplicationRecord['permissions'] = ['application:create', 'application:update', 'application:read', 'application:delete'];
      const KEEP = ['application:create', 'application:update'] as const;
      const admin = (overrides: Partial<ApplicationRecord> = {}) => makeApplication({ type: 'management', permissions: ADMIN, rules: [], ...overrides });

      it("with keep: refuses to delete, or update away the permissions of, the tenant's last holder; others pass", async () => {
        const last = admin();
        const other = makeApplication();
        const elsewhere = admin({ tenantId: TENANT_B });
        for (const app of [last, other, elsewhere]) await createApp(app);
        expect(await store.deleteApplication(TENANT_A, last.id, KEEP)).toBe('last_holder');
        expect(await store.updateApplication(TENANT_A, last.id, { permissions: ['application:create', 'application:read'], modifiedBy: null, modifiedAt: T0 }, KEEP)).toEqual({ status: 'last_holder' });
        expect(await store.getApplication(TENANT_A, last.id)).toMatchObject({ permissions: ADMIN });
        // Changes that keep a holder, and changes of other applications, pass.
        expect(await store.updateApplication(TENANT_A, last.id, { name: 'renamed', permissions: ADMIN, modifiedBy: null, modifiedAt: T0 }, KEEP)).toMatchObject({ status: 'updated' });
        expect(await store.deleteApplication(TENANT_A, other.id, KEEP)).toBe('deleted');
        expect(await store.deleteApplication(TENANT_A, 'missing', KEEP)).toBe('not_found');
        const second = admin();
        await createApp(second);
        expect(await store.deleteApplication(TENANT_A, last.id, KEEP)).toBe('deleted');
        expect(await store.deleteApplication(TENANT_A, second.id, KEEP)).toBe('last_holder');
        // Without keep, nothing is checked.
        expect(await store.deleteApplication(TENANT_A, second.id)).toBe('deleted');
      });

      it('with keep: two last holders removing each other concurrently leave one (race)', async () => {
        for (let i = 0; i < 10; i++) {
          const a = admin();
          const b = admin();
          await createApp(a);
          await createApp(b);
          const results = await Promise.all([
            Promise.resolve().then(() => store.deleteApplication(TENANT_A, a.id, KEEP)),
            i % 2 === 0
              ? store.deleteApplication(TENANT_A, b.id, KEEP)
              : store.updateApplication(TENANT_A, b.id, { permissions: [], modifiedBy: null, modifiedAt: T0 }, KEEP).then((r) => r.status),
          ]);
          expect(results.filter((r) => r === 'last_holder')).toHaveLength(1);
          const page = await store.listApplications(TENANT_A, offset(100, 1));
          const holders = page.items.filter((app) => KEEP.every((p) => app.permissions.includes(p)));
          expect(holders).toHaveLength(1);
          for (const app of page.items) await store.deleteApplication(TENANT_A, app.id);
        }
      });

      it('keeps ids per tenant: the same id may exist in two tenants', async () => {
        await createApp(makeApplication({ id: 'same-app', name: 'A' }));
        await createApp(makeApplication({ id: 'same-app', name: 'B', tenantId: TENANT_B }));
        expect((await store.getApplication(TENANT_A, 'same-app'))?.name).toBe('A');
        expect((await store.getApplication(TENANT_B, 'same-app'))?.name).toBe('B');
      });
    });

    describe('formulas', () => {
      it("creates, gets, updates and lists formulas; a duplicate id answers 'exists'", async () => {
        const formula = makeFormula({ description: null });
        await store.createFormula(formula);
        expect(await store.getFormula(TENANT_A, formula.id)).toEqual(formula);
        expect(await store.createFormula(formula)).toBe('exists');
        const changes = {
          name: 'Refund',
          description: 'Refunds',
          code: 'module.exports = async () => ({ raw: 1 });',
          configuration: [],
          requestParameters: [{ name: 'amount', description: null, type: 'number' as const, optional: true }],
          modifiedBy: APP_B,
          modifiedAt: T0 + 1,
        };
        const next: FormulaRecord = { ...formula, ...changes };
        expect(await store.updateFormula(TENANT_A, formula.id, changes)).toEqual({ status: 'updated', record: next });
        expect(await store.getFormula(TENANT_A, formula.id)).toEqual(next);
        expect(await store.updateFormula(TENANT_A, 'missing', changes)).toEqual({ status: 'not_found' });
        const second = makeFormula();
        await store.createFormula(second);
        expect((await store.listFormulas(TENANT_A, cursor(10))).items.map((f) => f.id)).toEqual([formula.id, second.id]);
        expect(await store.listFormulas(TENANT_A, offset(1, 2))).toEqual({ mode: 'offset', items: [second], totalItems: 2 });
      });

      it('is scoped by tenant', async () => {
        const b = makeFormula({ tenantId: TENANT_B });
        await store.createFormula(b);
        expect(await store.getFormula(TENANT_A, b.id)).toBeNull();
        expect(await store.updateFormula(TENANT_A, b.id, { name: 'hijacked', modifiedBy: null, modifiedAt: T0 })).toEqual({ status: 'not_found' });
        expect(await store.deleteFormula(TENANT_A, b.id)).toBe('not_found');
        expect(await store.getFormula(TENANT_B, b.id)).toEqual(b);
        expect((await store.listFormulas(TENANT_A, cursor(10))).items).toEqual([]);
      });

      it('deleteFormula: in_use while a reactor of the tenant references it, then deleted, then not_found', async () => {
        const formula = makeFormula();
        await store.createFormula(formula);
        const reactor = makeReactor({ formulaId: formula.id });
        await store.createReactor(reactor);
        expect(await store.deleteFormula(TENANT_A, formula.id)).toBe('in_use');
        expect(await store.getFormula(TENANT_A, formula.id)).toEqual(formula);
        expect(await store.deleteReactor(TENANT_A, reactor.id)).toBe(true);
        expect(await store.deleteFormula(TENANT_A, formula.id)).toBe('deleted');
        expect(await store.getFormula(TENANT_A, formula.id)).toBeNull();
        expect(await store.deleteFormula(TENANT_A, formula.id)).toBe('not_found');
      });

      it('a reactor of another tenant does not hold a formula', async () => {
        const formula = makeFormula({ id: 'shared-formula' });
        await store.createFormula(formula);
        await store.createFormula(makeFormula({ id: 'shared-formula', tenantId: TENANT_B }));
        await store.createReactor(makeReactor({ formulaId: 'shared-formula', tenantId: TENANT_B }));
        expect(await store.deleteFormula(TENANT_A, formula.id)).toBe('deleted');
        expect(await store.deleteFormula(TENANT_B, formula.id)).toBe('in_use');
      });
    });

    describe('reactors', () => {
      const formulaId = 'the-formula';
      beforeEach(async () => {
        await store.createFormula(makeFormula({ id: formulaId }));
      });

      it("creates, gets, updates and deletes; a duplicate id answers 'exists'", async () => {
        const reactor = makeReactor({ formulaId, applicationId: APP_A });
        await store.createReactor(reactor);
        expect(await store.getReactor(TENANT_A, reactor.id)).toEqual(reactor);
        expect(await store.createReactor(reactor)).toBe('exists');
        const changes = { name: 'Renamed', configuration: { API_KEY: 'other', n: 2 }, applicationId: null, modifiedBy: APP_B, modifiedAt: T0 + 1 };
        const next: ReactorRecord = { ...reactor, ...changes };
        expect(await store.updateReactor(TENANT_A, reactor.id, changes)).toEqual({ status: 'updated', record: next });
        expect(await store.getReactor(TENANT_A, reactor.id)).toEqual(next);
        expect(await store.updateReactor(TENANT_A, 'missing', changes)).toEqual({ status: 'not_found' });
        expect(await store.deleteReactor(TENANT_A, reactor.id)).toBe(true);
        expect(await store.getReactor(TENANT_A, reactor.id)).toBeNull();
        expect(await store.deleteReactor(TENANT_A, reactor.id)).toBe(false);
      });

      it('a reactor with inline code references no formula; its code round-trips and updates', async () => {
        const reactor = makeReactor({ formulaId: null, code: 'module.exports = async () => ({ raw: 1 })' });
        await store.createReactor(reactor);
        expect(await store.getReactor(TENANT_A, reactor.id)).toEqual(reactor);
        const changes = { code: 'module.exports = async () => ({ raw: 2 })', modifiedBy: APP_B, modifiedAt: T0 + 1 };
        const next: ReactorRecord = { ...reactor, ...changes };
        expect(await store.updateReactor(TENANT_A, reactor.id, changes)).toEqual({ status: 'updated', record: next });
        expect(await store.getReactor(TENANT_A, reactor.id)).toEqual(next);
        expect((await store.listReactors(TENANT_A, { ids: [reactor.id] }, cursor(10))).items).toEqual([next]);
        // It holds no formula: the tenant's formula is deleted while it exists.
        const free = makeFormula();
        await store.createFormula(free);
        expect(await store.deleteFormula(TENANT_A, free.id)).toBe('deleted');
      });

      it('is scoped by tenant', async () => {
        const b = makeReactor({ formulaId, tenantId: TENANT_B, name: 'Tenant B reactor' });
        await store.createReactor(b);
        expect(await store.getReactor(TENANT_A, b.id)).toBeNull();
        expect(await store.updateReactor(TENANT_A, b.id, { name: 'hijacked', modifiedBy: null, modifiedAt: T0 })).toEqual({ status: 'not_found' });
        expect(await store.deleteReactor(TENANT_A, b.id)).toBe(false);
        expect(await store.getReactor(TENANT_B, b.id)).toEqual(b);
        expect((await store.listReactors(TENANT_A, {}, cursor(10))).items).toEqual([]);
        expect((await store.listReactors(TENANT_A, { ids: [b.id], name: 'tenant' }, cursor(10))).items).toEqual([]);
      });

      const NAMES = ['Stripe Payments', 'stripe refunds', 'Adyen PAYMENTS', '100% Sure', '1000 items', 'snake_case', 'snakeXcase', 'back\\slash'];
      const namesOf = async (filter: { ids?: string[]; name?: string }) =>
        (await store.listReactors(TENANT_A, filter, cursor(100))).items.map((r) => r.name);

      it('filters by name: case-insensitive substring where * matches any run of characters', async () => {
        for (const name of NAMES) await store.createReactor(makeReactor({ formulaId, name }));
        await store.createReactor(makeReactor({ formulaId, name: 'Stripe Payments', tenantId: TENANT_B }));
        expect(await namesOf({ name: 'STRIPE' })).toEqual(['Stripe Payments', 'stripe refunds']);
        expect(await namesOf({ name: 'payments' })).toEqual(['Stripe Payments', 'Adyen PAYMENTS']);
        expect(await namesOf({ name: 'stripe*ments' })).toEqual(['Stripe Payments']);
        expect(await namesOf({ name: 's*e*s' })).toEqual(['Stripe Payments', 'stripe refunds', 'snake_case', 'snakeXcase']);
        expect(await namesOf({ name: '*' })).toEqual(NAMES);
        expect(await namesOf({ name: 'nothing like it' })).toEqual([]);
      });

      it('treats % and _ and \\ in the name filter as themselves, not as wildcards', async () => {
        for (const name of NAMES) await store.createReactor(makeReactor({ formulaId, name }));
        expect(await namesOf({ name: '100%' })).toEqual(['100% Sure']);
        expect(await namesOf({ name: '%' })).toEqual(['100% Sure']);
        expect(await namesOf({ name: 'snake_case' })).toEqual(['snake_case']);
        expect(await namesOf({ name: '_' })).toEqual(['snake_case']);
        expect(await namesOf({ name: '\\' })).toEqual(['back\\slash']);
      });

      it('filters by ids, and by ids and name together; lists in creation order with both paging modes', async () => {
        const reactors = [];
        for (const name of ['one', 'two', 'three']) {
          const reactor = makeReactor({ formulaId, name });
          await store.createReactor(reactor);
          reactors.push(reactor);
        }
        const [one, two, three] = reactors;
        expect(await namesOf({ ids: [three!.id, one!.id, 'unknown'] })).toEqual(['one', 'three']);
        expect(await namesOf({ ids: [three!.id, one!.id], name: 'thr' })).toEqual(['three']);
        const first = await store.listReactors(TENANT_A, {}, cursor(2));
        if (first.mode !== 'cursor') throw new Error('cursor mode expected');
        expect(first.items).toEqual([one, two]);
        expect(await store.listReactors(TENANT_A, {}, cursor(2, first.next!))).toEqual({ mode: 'cursor', items: [three], next: null });
        expect(await store.listReactors(TENANT_A, { name: 't' }, offset(1, 2))).toEqual({ mode: 'offset', items: [three], totalItems: 2 });
      });
    });

    describe('idempotency keys', () => {
      it('claims a key once; a second claim returns the in-flight record', async () => {
        const record = makeIdempotency({ key: 'k1' });
        expect(await store.claimIdempotencyKey(record, T0)).toEqual({ claimed: true });
        const again = await store.claimIdempotencyKey({ ...record, requestHash: 'hash-2', createdAt: T0 + 1 }, T0 + 1);
        expect(again).toEqual({ claimed: false, existing: { ...record, state: 'in_flight', status: null, body: null } });
      });

      const claimOf = (record: IdempotencyRecord) => ({ tenantId: record.tenantId, applicationId: record.applicationId, key: record.key, claimedAt: record.createdAt });
      const bytes = (text: string) => Buffer.from(text, 'utf8');
      const response = (status: number, body: string, expiresAt = T0 + 24 * HOUR, tokenIds: string[] = []) => ({ status, body: bytes(body), expiresAt, tokenIds });

      it('stores the response on completion, kept until the expiry given then; later claims return it', async () => {
        const record = makeIdempotency({ key: 'k2', expiresAt: T0 + 5 * 60_000 });
        await store.claimIdempotencyKey(record, T0);
        await store.completeIdempotencyKey(claimOf(record), response(201, '{"id":"tok"}', T0 + 24 * HOUR));
        const done = { ...record, state: 'done', status: 201, body: bytes('{"id":"tok"}'), expiresAt: T0 + 24 * HOUR };
        // Past the in-flight lease, the stored response still answers.
        expect(await store.claimIdempotencyKey(record, T0 + HOUR)).toEqual({ claimed: false, existing: done });
      });

      it('a released key can be claimed again; a completed one is not released', async () => {
        const record = makeIdempotency({ key: 'k3' });
        await store.claimIdempotencyKey(record, T0);
        await store.releaseIdempotencyKey(claimOf(record));
        const second = { ...record, requestHash: 'hash-2', createdAt: T0 + 1 };
        expect(await store.claimIdempotencyKey(second, T0 + 1)).toEqual({ claimed: true });
        await store.completeIdempotencyKey(claimOf(second), response(200, '{}'));
        await store.releaseIdempotencyKey(claimOf(second));
        expect(await store.claimIdempotencyKey(record, T0 + 2)).toMatchObject({ claimed: false, existing: { state: 'done', requestHash: 'hash-2' } });
      });

      it('replaces an expired record', async () => {
        const record = makeIdempotency({ key: 'k4', expiresAt: T0 + HOUR });
        await store.claimIdempotencyKey(record, T0);
        await store.completeIdempotencyKey(claimOf(record), response(200, '{}', T0 + HOUR));
        expect(await store.claimIdempotencyKey({ ...record, requestHash: 'hash-2' }, T0 + HOUR - 1)).toMatchObject({ claimed: false });
        const fresh = { ...record, requestHash: 'hash-3', createdAt: T0 + HOUR, expiresAt: T0 + 2 * HOUR };
        expect(await store.claimIdempotencyKey(fresh, T0 + HOUR)).toEqual({ claimed: true });
        expect(await store.claimIdempotencyKey(record, T0 + HOUR + 1)).toEqual({ claimed: false, existing: fresh });
      });

      it('an in-flight claim whose lease ran out can be claimed again, and the old claim can then neither complete nor release it', async () => {
        const stale = makeIdempotency({ key: 'k6', expiresAt: T0 + 60_000 });
        await store.claimIdempotencyKey(stale, T0);
        expect(await store.claimIdempotencyKey({ ...stale, createdAt: T0 + 1 }, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'in_flight' } });
        const fresh = { ...stale, createdAt: T0 + 60_000, expiresAt: T0 + 120_000 };
        expect(await store.claimIdempotencyKey(fresh, T0 + 60_000)).toEqual({ claimed: true });
        await store.completeIdempotencyKey(claimOf(stale), response(201, '"stale"'));
        await store.releaseIdempotencyKey(claimOf(stale));
        expect(await store.claimIdempotencyKey({ ...stale, createdAt: T0 + 60_001 }, T0 + 60_001)).toEqual({ claimed: false, existing: fresh });
        await store.completeIdempotencyKey(claimOf(fresh), response(201, '"fresh"'));
        expect(await store.claimIdempotencyKey(stale, T0 + 60_002)).toMatchObject({ claimed: false, existing: { state: 'done', body: bytes('"fresh"') } });
      });

      it('keys are scoped by tenant and application', async () => {
        const mine = makeIdempotency({ key: 'k5' });
        expect(await store.claimIdempotencyKey(mine, T0)).toEqual({ claimed: true });
        expect(await store.claimIdempotencyKey(makeIdempotency({ key: 'k5', applicationId: APP_B }), T0)).toEqual({ claimed: true });
        expect(await store.claimIdempotencyKey(makeIdempotency({ key: 'k5', tenantId: TENANT_B }), T0)).toEqual({ claimed: true });
        await store.completeIdempotencyKey({ ...claimOf(mine), tenantId: TENANT_B }, response(500, 'b'));
        await store.releaseIdempotencyKey({ ...claimOf(mine), applicationId: APP_B });
        expect(await store.claimIdempotencyKey(mine, T0)).toMatchObject({ claimed: false, existing: { state: 'in_flight' } });
      });

      it('purges expired records of any tenant, in flight or done, up to the limit, and keeps the rest', async () => {
        const doneExpired = makeIdempotency({ key: 'p1', expiresAt: T0 + HOUR });
        const leaseLapsed = makeIdempotency({ key: 'p2', tenantId: TENANT_B, expiresAt: T0 + HOUR - 1 });
        const live = makeIdempotency({ key: 'p3', expiresAt: T0 + HOUR + 1 });
        for (const record of [doneExpired, leaseLapsed, live]) await store.claimIdempotencyKey(record, T0);
        await store.completeIdempotencyKey(claimOf(doneExpired), response(200, '{}', T0 + HOUR));
        expect(await store.purgeExpiredIdempotencyKeys(T0 + HOUR, 1)).toBe(1);
        expect(await store.purgeExpiredIdempotencyKeys(T0 + HOUR, 10)).toBe(1);
        expect(await store.purgeExpiredIdempotencyKeys(T0 + HOUR, 10)).toBe(0);
        // The live record still answers; the purged keys can be claimed afresh.
        expect(await store.claimIdempotencyKey({ ...live, createdAt: T0 + HOUR }, T0 + HOUR)).toMatchObject({ claimed: false, existing: { key: 'p3' } });
        expect(await store.claimIdempotencyKey({ ...doneExpired, createdAt: T0 + HOUR, expiresAt: T0 + 2 * HOUR }, T0 + HOUR)).toEqual({ claimed: true });
        await expect(Promise.resolve().then(() => store.purgeExpiredIdempotencyKeys(T0, 0))).rejects.toBeInstanceOf(ValidationError);
      });

      it('completion stores a response without a body as null', async () => {
        const record = makeIdempotency({ key: 'nobody' });
        await store.claimIdempotencyKey(record, T0);
        await store.completeIdempotencyKey(claimOf(record), { status: 204, body: null, expiresAt: T0 + 24 * HOUR, tokenIds: [] });
        expect(await store.claimIdempotencyKey(record, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', status: 204, body: null } });
      });

      it("deleting a token withdraws, in the same transaction, the stored responses that carry it (and only those); ids naming no token are ignored", async () => {
        const [carried, other] = await createAll([makeToken(), makeToken()]);
        const withToken = makeIdempotency({ key: 'w1' });
        const withOther = makeIdempotency({ key: 'w2' });
        const withNone = makeIdempotency({ key: 'w3' });
        for (const record of [withToken, withOther, withNone]) await store.claimIdempotencyKey(record, T0);
        await store.completeIdempotencyKey(claimOf(withToken), response(200, 'a', undefined, [carried!.id, 'no-such-token']));
        await store.completeIdempotencyKey(claimOf(withOther), response(200, 'b', undefined, [other!.id]));
        await store.completeIdempotencyKey(claimOf(withNone), response(200, 'c', undefined, ['no-such-token']));
        expect(await remove(TENANT_A, carried!.id)).toBe(true);
        expect(await store.claimIdempotencyKey(withToken, T0 + 1)).toEqual({
          claimed: false,
          existing: { ...withToken, state: 'withdrawn', status: null, body: null, withdrawAt: null },
        });
        expect(await store.claimIdempotencyKey(withOther, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', body: bytes('b') } });
        expect(await store.claimIdempotencyKey(withNone, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', body: bytes('c') } });
        // The withdrawn record keeps its key until it expires, then the key is free.
        expect(await store.purgeExpiredIdempotencyKeys(T0 + 24 * HOUR, 10)).toBe(3);
        expect(await store.claimIdempotencyKey({ ...withToken, createdAt: T0 + 24 * HOUR }, T0 + 24 * HOUR)).toEqual({ claimed: true });
      });

      it('a token deleted before the completion leaves the record withdrawn', async () => {
        const [token] = await createAll([makeToken()]);
        const record = makeIdempotency({ key: 'w4' });
        await store.claimIdempotencyKey(record, T0);
        await remove(TENANT_A, token!.id);
        await store.completeIdempotencyKey(claimOf(record), response(201, 'data', T0 + 24 * HOUR, [token!.id]));
        expect(await store.claimIdempotencyKey(record, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'withdrawn', body: null, expiresAt: T0 + 24 * HOUR } });
      });

      it("completion sets withdrawAt to the earliest expiry or cvc purge among the tokens carried", async () => {
        const [expiring, withCvc, plain] = await createAll([makeToken({ expiresAt: T0 + 5 * HOUR }), makeToken({ cvcPurgeAt: T0 + HOUR }), makeToken()]);
        const record = makeIdempotency({ key: 'w5' });
        await store.claimIdempotencyKey(record, T0);
        await store.completeIdempotencyKey(claimOf(record), response(200, 'x', undefined, [plain!.id, expiring!.id, withCvc!.id]));
        expect(await store.claimIdempotencyKey(record, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', withdrawAt: T0 + HOUR } });
        const none = makeIdempotency({ key: 'w6' });
        await store.claimIdempotencyKey(none, T0);
        await store.completeIdempotencyKey(claimOf(none), response(200, 'y', undefined, [plain!.id]));
        expect(await store.claimIdempotencyKey(none, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done', withdrawAt: null } });
      });

      it('purging an expired token and removing a cvc withdraw the responses that carry them', async () => {
        const [expiring, withCvc] = await createAll([makeToken({ expiresAt: T0 + HOUR }), makeToken({ cvcPurgeAt: T0 + HOUR })]);
        const a = makeIdempotency({ key: 'w7' });
        const b = makeIdempotency({ key: 'w8' });
        for (const record of [a, b]) await store.claimIdempotencyKey(record, T0);
        await store.completeIdempotencyKey(claimOf(a), response(200, 'a', undefined, [expiring!.id]));
        await store.completeIdempotencyKey(claimOf(b), response(200, 'b', undefined, [withCvc!.id]));
        expect((await store.purgeExpiredTokens(T0 + HOUR, 10)).length).toBe(1);
        expect(await store.claimIdempotencyKey(a, T0 + HOUR)).toMatchObject({ claimed: false, existing: { state: 'withdrawn', body: null } });
        // A re-encryption keeps the cvc (and the stored response); its removal withdraws it.
        const rewritten = new Uint8Array([7, 7]);
        expect(await store.replaceCiphertext(TENANT_A, withCvc!.id, withCvc!.ciphertext, { ciphertext: rewritten, keyVersion: 2, cvcPurgeAt: T0 + HOUR })).toBe(true);
        expect(await store.claimIdempotencyKey(b, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'done' } });
        expect(await store.replaceCiphertext(TENANT_A, withCvc!.id, rewritten, { ciphertext: new Uint8Array([8]), keyVersion: 2, cvcPurgeAt: null })).toBe(true);
        expect(await store.claimIdempotencyKey(b, T0 + HOUR)).toMatchObject({ claimed: false, existing: { state: 'withdrawn', body: null } });
      });

      it('a token deleted concurrently with the completion never leaves its response replayable (race)', async () => {
        for (let i = 0; i < 20; i++) {
          const [token] = await createAll([makeToken()]);
          const record = makeIdempotency({ key: `race-del-${i}` });
          await store.claimIdempotencyKey(record, T0);
          await Promise.all([
            Promise.resolve().then(() => store.completeIdempotencyKey(claimOf(record), response(200, 'data', undefined, [token!.id]))),
            Promise.resolve().then(() => remove(TENANT_A, token!.id)),
          ]);
          expect(await store.claimIdempotencyKey(record, T0 + 1)).toMatchObject({ claimed: false, existing: { state: 'withdrawn', body: null } });
        }
      });

      it('exactly one of many concurrent claims wins', async () => {
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) => Promise.resolve().then(() => store.claimIdempotencyKey(makeIdempotency({ key: 'race', requestHash: `h${i}` }), T0))),
        );
        expect(results.filter((r) => r.claimed)).toHaveLength(1);
      });
    });

    describe('audit log', () => {
      it('appends batches and lists oldest first with increasing seq', async () => {
        const entries = [
          makeAudit({ operation: 'token:read', resourceId: 'r1', at: T0 + 1 }),
          makeAudit({ operation: 'token:read', resourceId: 'r2', outcome: 'failure', detail: 'not_found', at: T0 + 2 }),
          makeAudit({ operation: 'reactor:invoke', resourceId: null, actor: APP_B, at: T0 + 3 }),
        ];
        await store.appendAudit(entries.slice(0, 2));
        await store.appendAudit([]);
        await store.appendAudit(entries.slice(2));
        const listed = await store.listAudit(TENANT_A, {}, cursor(10));
        expect(listed.items.map(({ seq: _seq, ...rest }) => rest)).toEqual(entries);
        const seqs = listed.items.map((e) => e.seq);
        expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
        expect(new Set(seqs).size).toBe(3);
      });

      it('appends a large batch completely and in order', async () => {
        // 75 = two full chunks of a multi-row insert and a remainder, for stores that chunk.
        const entries = Array.from({ length: 75 }, (_, i) =>
          makeAudit({ resourceId: i % 3 === 0 ? null : `r${i}`, detail: i % 2 ? 'not_found' : null, outcome: i % 2 ? 'failure' : 'success', at: T0 + i }),
        );
        await store.appendAudit(entries);
        const listed = await store.listAudit(TENANT_A, {}, { mode: 'offset', size: 100, page: 1 });
        expect(listed.items.map(({ seq: _seq, ...rest }) => rest)).toEqual(entries);
      });

      it('filters by resource, actor and operation, within the tenant', async () => {
        await store.appendAudit([makeAudit({ resourceId: 'r1', operation: 'token:read' })]);
        await store.appendAudit([makeAudit({ resourceId: 'r1', operation: 'token:update', actor: APP_B })]);
        await store.appendAudit([makeAudit({ resourceId: 'r2', operation: 'token:read', actor: APP_B })]);
        await store.appendAudit([makeAudit({ resourceId: 'r1', operation: 'token:read', tenantId: TENANT_B })]);
        const ops = async (filter: object) => (await store.listAudit(TENANT_A, filter, cursor(10))).items.map((e) => `${e.resourceId}/${e.operation}/${e.actor}`);
        expect(await ops({ resourceId: 'r1' })).toEqual([`r1/token:read/${APP_A}`, `r1/token:update/${APP_B}`]);
        expect(await ops({ actor: APP_B })).toEqual([`r1/token:update/${APP_B}`, `r2/token:read/${APP_B}`]);
        expect(await ops({ operation: 'token:read' })).toEqual([`r1/token:read/${APP_A}`, `r2/token:read/${APP_B}`]);
        expect(await ops({ resourceId: 'r1', actor: APP_B, operation: 'token:update' })).toEqual([`r1/token:update/${APP_B}`]);
        expect(await ops({ resourceId: 'r3' })).toEqual([]);
        expect((await store.listAudit(TENANT_B, {}, cursor(10))).items.map((e) => e.resourceId)).toEqual(['r1']);
      });

      it('pages in both modes', async () => {
        for (let i = 0; i < 5; i++) await store.appendAudit([makeAudit({ resourceId: `r${i}` })]);
        const one = await store.listAudit(TENANT_A, {}, cursor(3));
        if (one.mode !== 'cursor') throw new Error('cursor mode expected');
        expect(one.items.map((e) => e.resourceId)).toEqual(['r0', 'r1', 'r2']);
        const two = await store.listAudit(TENANT_A, {}, cursor(3, one.next!));
        expect(two).toMatchObject({ mode: 'cursor', next: null });
        expect(two.items.map((e) => e.resourceId)).toEqual(['r3', 'r4']);
        const page = await store.listAudit(TENANT_A, {}, offset(2, 3));
        expect(page).toMatchObject({ mode: 'offset', totalItems: 5 });
        expect(page.items.map((e) => e.resourceId)).toEqual(['r4']);
      });
    });

    describeWebhookStore(() => store);

    describe('races', () => {
      it('many concurrent creates with one id: exactly one created, the rest id_conflict', async () => {
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => Promise.resolve().then(() => create(makeToken({ id: 'contested', ciphertext: new Uint8Array([i]) })))),
        );
        expect(results.filter((r) => r.status === 'created')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'id_conflict')).toHaveLength(19);
        expect(await listIds({ ids: ['contested'] })).toEqual(['contested']);
        expect(await auditOf(TENANT_A, 'contested')).toEqual([]);
      });

      it('many concurrent deduplicating creates with one fingerprint: exactly one created, the rest duplicates of it', async () => {
        const tokens = Array.from({ length: 20 }, () => makeToken({ fingerprint: 'contested-fp', type: 'card', deduplicate: true }));
        const results = await Promise.all(tokens.map((token) => Promise.resolve().then(() => create(token))));
        const created = tokens.filter((_, i) => results[i]!.status === 'created');
        expect(created).toHaveLength(1);
        for (const result of results) {
          if (result.status === 'duplicate') expect(result.existing.id).toBe(created[0]!.id);
          else expect(result.status).toBe('created');
        }
        expect(await listIds({ fingerprints: ['contested-fp'] })).toEqual([created[0]!.id]);
      });

      it('many concurrent deletes of one token: exactly one true, one reference record', async () => {
        const token = makeToken();
        await createAll([token]);
        const results = await Promise.all(Array.from({ length: 10 }, () => Promise.resolve().then(() => remove(TENANT_A, token.id))));
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.getDeletedToken(TENANT_A, token.id)).not.toBeNull();
        expect((await auditOf(TENANT_A, token.id)).filter((e) => e.operation === 'token:delete')).toHaveLength(1);
      });
    });
  });
}
