/**
 * Red team of token list and search cursors (GET /v2/tokens, POST /v2/tokens/search and the cursor
 * mode of the v1 routes): a store cursor is a position in a sequence every tenant writes to, so a
 * caller must neither read it (it would count what other tenants and other applications created
 * between two pages) nor write one, nor replay a cursor issued for another tenant, application,
 * permission or filter (docs/authority.md, Cursors).
 */
import { expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import type { Permission } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';

const ALL: Permission[] = ['token:create', 'token:read', 'token:search', 'token:update', 'token:delete', 'token:use'];
const REVEAL_ALL = [{ priority: 0, container: '/', transform: 'reveal' as const, permissions: ALL }];
const card = (n: number) => ({ type: 'card', data: { number: ['4242424242424242', '4000056655665556', '5555555555554444'][n % 3]! }, containers: ['/pci/'] });

describeEachStore('token cursors are sealed and bound to their query', (store) => {
  async function setup() {
    const vault = await store.vault();
    const app = await vault.caller({ permissions: ALL, rules: REVEAL_ALL });
    const other = await vault.caller({ permissions: ALL, rules: REVEAL_ALL });
    const tenant = await vault.createTenant({ name: 'other' });
    const admin = await vault.authenticate(tenant.application.key);
    const made = await vault.applications.create(admin, { name: 'o', type: 'private', permissions: ALL, rules: REVEAL_ALL });
    const stranger = await vault.authenticate(made.key!);
    for (let i = 0; i < 3; i++) await vault.tokens.create(app, card(i));
    for (let i = 0; i < 3; i++) await vault.tokens.create(stranger, card(i));
    return { vault, app, other, stranger };
  }

  it('a cursor shows no position, and one written by the caller is a 400', async () => {
    const { vault, app } = await setup();
    const first = await vault.tokens.list(app, { size: 1 });
    const next = (first.pagination as { next: string }).next;
    // The store's cursor would be base64url of the row's sequence number, shared by every tenant.
    expect(Buffer.from(next, 'base64url').toString('utf8')).not.toMatch(/^\d+$/);
    for (const forged of ['MQ', 'Mg', Buffer.from('1000000', 'utf8').toString('base64url')]) {
      await expect(vault.tokens.list(app, { size: 1, start: forged })).rejects.toBeInstanceOf(ValidationError);
      await expect(vault.tokens.search(app, { query: 'type:card', size: 1, start: forged })).rejects.toBeInstanceOf(ValidationError);
    }
    // The cursor it was given still pages on, to the end.
    const seen = [first.data[0]!.id];
    let start: string | null = next;
    while (start !== null) {
      const page = await vault.tokens.list(app, { size: 1, start });
      seen.push(...page.data.map((t) => t.id));
      start = (page.pagination as { next: string | null }).next;
    }
    expect(new Set(seen).size).toBe(3);
  });

  it('a cursor replayed in another tenant, by another application, with another filter or in a search is a 400', async () => {
    const { vault, app, other, stranger } = await setup();
    const listed = (await vault.tokens.list(app, { size: 1, type: 'card' })).pagination as { next: string };
    const searched = (await vault.tokens.search(app, { query: 'type:card', size: 1 })).pagination as { next: string };
    await expect(vault.tokens.list(stranger, { size: 1, type: 'card', start: listed.next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.tokens.list(other, { size: 1, type: 'card', start: listed.next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.tokens.list(app, { size: 1, type: 'token', start: listed.next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.tokens.list(app, { size: 1, type: 'card', container: '/pci/', start: listed.next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.tokens.search(app, { query: 'type:card', size: 1, start: listed.next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.tokens.list(app, { size: 1, type: 'card', start: searched.next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.tokens.search(app, { query: 'type:token', size: 1, start: searched.next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.tokens.search(stranger, { query: 'type:card', size: 1, start: searched.next })).rejects.toBeInstanceOf(ValidationError);
    // The same caller and query page on, with another page size too.
    expect((await vault.tokens.list(app, { size: 2, type: 'card', start: listed.next })).data).toHaveLength(2);
    expect((await vault.tokens.search(app, { query: 'type:card', size: 2, start: searched.next })).data).toHaveLength(2);
  });

  it('a metadata filter spelled in another case or key order keeps its cursor; another value does not', async () => {
    const { vault, app } = await setup();
    for (let i = 0; i < 2; i++) await vault.tokens.create(app, { ...card(i), metadata: { tag: 'x', team: 'ops' } });
    const next = ((await vault.tokens.list(app, { size: 1, metadata: { tag: 'x', team: 'ops' } })).pagination as { next: string }).next;
    expect((await vault.tokens.list(app, { size: 5, metadata: { TEAM: 'OPS', Tag: 'X' }, start: next })).data).toHaveLength(1);
    await expect(vault.tokens.list(app, { size: 5, metadata: { tag: 'y', team: 'ops' }, start: next })).rejects.toBeInstanceOf(ValidationError);
    await expect(vault.tokens.list(app, { size: 5, metadata: { tag: 'x' }, start: next })).rejects.toBeInstanceOf(ValidationError);
  });

  it('a cursor outlives a data key rotation', async () => {
    const { vault, app } = await setup();
    const next = ((await vault.tokens.list(app, { size: 1 })).pagination as { next: string }).next;
    await vault.operator.keys.rotate(app.tenantId);
    expect((await vault.tokens.list(app, { size: 5, start: next })).data).toHaveLength(2);
  });
});
