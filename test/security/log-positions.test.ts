/**
 * Log entries and log cursors show no place in the audit trail's sequence, which every tenant
 * writes to: ids are opaque and stable, cursors sealed and bound to the caller and the query
 * (docs/authority.md, Cursors).
 */
import { expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import type { Permission } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';

const ALL: Permission[] = ['token:create', 'token:read'];
const REVEAL_ALL = [{ priority: 0, container: '/', transform: 'reveal' as const, permissions: ALL }];
type Cursor = { next: string | null };

describeEachStore('log entry ids and log cursors', (store) => {
  async function setup() {
    const vault = await store.vault();
    const writer = await vault.caller({ permissions: ALL, rules: REVEAL_ALL });
    const app = await vault.caller({ type: 'management', permissions: ['log:read'] });
    const other = await vault.caller({ type: 'management', permissions: ['log:read'] });
    const tenant = await vault.createTenant({ name: 'other' });
    const admin = await vault.authenticate(tenant.application.key);
    const made = await vault.authenticate((await vault.applications.create(admin, { name: 'o', type: 'private', permissions: ALL, rules: REVEAL_ALL })).key!);
    for (let i = 0; i < 3; i++) {
      await vault.tokens.create(writer, { type: 'token', data: `a${i}` });
      await vault.tokens.create(made, { type: 'token', data: `s${i}` });
    }
    return { vault, app, other, stranger: admin };
  }

  it('ids are opaque and stable, and a cursor shows no position; a written one is a 400', async () => {
    const { vault, app } = await setup();
    const all = await vault.logs.list(app, { operation: 'token:create', size: 10 });
    expect(all.data).toHaveLength(3);
    for (const entry of all.data) {
      expect(entry.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(entry).not.toHaveProperty('seq');
    }
    expect(new Set(all.data.map((e) => e.id)).size).toBe(3);
    const first = await vault.logs.list(app, { operation: 'token:create', size: 1 });
    expect(first.data[0]!.id).toBe(all.data[0]!.id);
    const next = (first.pagination as Cursor).next!;
    expect(Buffer.from(next, 'base64url').toString('utf8')).not.toMatch(/^\d+$/);
    for (const forged of ['MQ', 'Mg', Buffer.from('1', 'utf8').toString('base64url')]) {
      await expect(vault.logs.list(app, { operation: 'token:create', size: 1, start: forged })).rejects.toBeInstanceOf(ValidationError);
    }
    const seen = [first.data[0]!.id];
    let start: string | null = next;
    while (start !== null) {
      const page = await vault.logs.list(app, { operation: 'token:create', size: 1, start });
      seen.push(...page.data.map((e) => e.id));
      start = (page.pagination as Cursor).next;
    }
    expect(seen).toEqual(all.data.map((e) => e.id));
  });

  it('a cursor replayed in another tenant, by another application or with another filter is a 400', async () => {
    const { vault, app, other, stranger } = await setup();
    const next = ((await vault.logs.list(app, { operation: 'token:create', size: 1 })).pagination as Cursor).next!;
    const typed = ((await vault.logs.list(app, { entity_type: 'token', size: 1 })).pagination as Cursor).next!;
    await expect(vault.logs.list(stranger, { operation: 'token:create', size: 1, start: next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.logs.list(other, { operation: 'token:create', size: 1, start: next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.logs.list(app, { operation: 'token:read', size: 1, start: next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.logs.list(app, { entity_type: 'token', size: 1, start: next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.logs.list(app, { operation: 'token:create', size: 1, start: typed })).rejects.toBeInstanceOf(ValidationError);
    expect((await vault.logs.list(app, { operation: 'token:create', size: 5, start: next })).data).toHaveLength(2);
    expect((await vault.logs.list(app, { entity_type: 'token', size: 5, start: typed })).data.length).toBeGreaterThan(0);
  });
});
