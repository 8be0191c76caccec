import { beforeEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { AuthenticationError, NotFoundError, ValidationError } from '../../src/errors/errors.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import type { Caller } from '../../src/auth/caller.js';
import { describeEachStore } from '../support/stores.js';
import { heldStoreMethod } from '../support/held-store-method.js';

describeEachStore('applications service', (store) => {
  let vault: TestVault;
  let admin: Caller;

  beforeEach(async () => {
    vault = await store.vault();
    admin = await vault.authenticate(vault.adminKey);
  });

  describe('applications', () => {
    it('creates an application with a key shown once and stored only as a hash', async () => {
      const app = await vault.applications.create(admin, { name: 'checkout', type: 'private', permissions: ['token:create', 'token:read'] });
      expect(app.key).toMatch(/^tv_[A-Za-z0-9_-]{43}$/);
      expect(app).toMatchObject({
        name: 'checkout',
        type: 'private',
        permissions: ['token:create', 'token:read'],
        rules: [],
        tenant_id: vault.tenantId,
        created_by: admin.applicationId,
      });
      expect(await vault.applications.get(admin, app.id)).not.toHaveProperty('key');
      const record = await vault.store.getApplication(vault.tenantId, app.id);
      expect(JSON.stringify(record)).not.toContain(app.key);
      const keys = await vault.store.listApplicationKeys(vault.tenantId, app.id);
      expect(JSON.stringify(keys)).not.toContain(app.key);
      expect(keys.map((k) => k.keyHash)).toEqual([hashApiKey(app.key!).keyHash]);
    });

    it('authenticates the key to a caller and rejects unknown, empty and missing keys', async () => {
      const app = await vault.applications.create(admin, { name: 'a', type: 'public', permissions: ['token:create'] });
      const caller = await vault.authenticate(app.key!);
      expect(caller).toMatchObject({ tenantId: vault.tenantId, applicationId: app.id, applicationType: 'public' });
      await expect(vault.authenticate(`${app.key}x`)).rejects.toThrow(AuthenticationError);
      await expect(vault.authenticate('')).rejects.toThrow(AuthenticationError);
      await expect(vault.authenticate(undefined)).rejects.toThrow(AuthenticationError);
    });

    it('a permission the type may not hold is a validation error naming it', async () => {
      for (const [type, permission] of [
        ['public', 'token:read'],
        ['private', 'application:create'],
        ['management', 'token:use'],
      ] as const) {
        const error = await vault.applications.create(admin, { name: 'x', type, permissions: [permission] }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).errors['permissions[0]']?.[0]).toContain(permission);
      }
      const rule = await vault.applications
        .create(admin, { name: 'x', type: 'public', permissions: ['token:create'], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:read'] }] })
        .catch((e: unknown) => e);
      expect(Object.keys((rule as ValidationError).errors)).toEqual(['rules[0].permissions[0]']);
    });

    it('rejects malformed bodies', async () => {
      const bad = [
        [{ type: 'private' }, 'name'],
        [{ name: 'x', type: 'robot' }, 'type'],
        [{ name: 'x', type: 'private', permissions: ['token:fly'] }, 'permissions[0]'],
        [{ name: 'x', type: 'private', rules: [{ priority: 0, container: 'nope', transform: 'reveal', permissions: ['token:read'] }] }, 'rules[0].container'],
        [{ name: 'x', type: 'private', rules: [{ priority: -1, container: '/', transform: 'reveal', permissions: ['token:read'] }] }, 'rules[0].priority'],
        [{ name: 'x', type: 'private', rules: [{ priority: 0, container: '/', transform: 'show', permissions: ['token:read'] }] }, 'rules[0].transform'],
        [{ name: 'x', type: 'private', extra: true }, 'extra'],
        [{ name: 'x'.repeat(201), type: 'private' }, 'name'],
      ] as const;
      for (const [body, field] of bad) {
        const error = await vault.applications.create(admin, body as never).catch((e: unknown) => e);
        expect(error, JSON.stringify(body)).toBeInstanceOf(ValidationError);
        expect(Object.keys((error as ValidationError).errors), JSON.stringify(body)).toContain(field);
      }
      expect((await vault.applications.list(admin)).data).toHaveLength(1);
    });

    it('updates permissions and rules, regenerates the key, deletes', async () => {
      const app = await vault.applications.create(admin, { name: 'a', type: 'private', permissions: ['token:read'] });
      const updated = await vault.applications.update(admin, app.id, { name: 'b', permissions: ['token:read', 'token:use'] });
      expect(updated).toMatchObject({ name: 'b', permissions: ['token:read', 'token:use'], type: 'private' });
      await expect(vault.applications.update(admin, app.id, { name: 'b', type: 'public' } as never)).rejects.toThrow(ValidationError);
      const regenerated = await vault.applications.regenerateKey(admin, app.id);
      await expect(vault.authenticate(app.key!)).rejects.toThrow(AuthenticationError);
      expect((await vault.authenticate(regenerated.key!)).permissions.has('token:use')).toBe(true);
      await vault.applications.delete(admin, app.id);
      await expect(vault.applications.get(admin, app.id)).rejects.toThrow(NotFoundError);
      await expect(vault.authenticate(regenerated.key!)).rejects.toThrow(AuthenticationError);
    });

    it('remembered keys are forgotten at once on changes through the vault, and after authCacheMs otherwise', async () => {
      const app = await vault.applications.create(admin, { name: 'a', type: 'private', permissions: ['token:read'] });
      expect((await vault.authenticate(app.key!)).permissions.has('token:use')).toBe(false);
      await vault.applications.update(admin, app.id, { name: 'a', permissions: ['token:read', 'token:use'] });
      expect((await vault.authenticate(app.key!)).permissions.has('token:use')).toBe(true);
      const regenerated = await vault.applications.regenerateKey(admin, app.id);
      await expect(vault.authenticate(app.key!)).rejects.toThrow(AuthenticationError);
      await vault.authenticate(regenerated.key!);
      // Another process sharing the database deletes the application: this vault notices within 1 s.
      await vault.store.deleteApplication(vault.tenantId, app.id);
      await vault.authenticate(regenerated.key!);
      vault.clock.advance(1000);
      await expect(vault.authenticate(regenerated.key!)).rejects.toThrow(AuthenticationError);
    });

    it('requests presenting a key during its lookup share it; a lookup begun before a change is not remembered', async () => {
      const inner = store.create();
      const lookups = heldStoreMethod(inner, 'findApplicationKeys');
      const shared = await createTestVault({ store: lookups.store });
      try {
        const root = await shared.authenticate(shared.adminKey);
        const app = await shared.applications.create(root, { name: 'a', type: 'private', permissions: ['token:read'] });
        lookups.reset();
        const callers = await Promise.all([1, 2, 3, 4].map(() => shared.authenticate(app.key!)));
        expect(lookups.answered).toBe(1);
        expect(callers.map((c) => c.applicationId)).toEqual([app.id, app.id, app.id, app.id]);
        // Lapsed; the next lookup is held while the application changes through the vault.
        shared.clock.advance(1000);
        lookups.holdNext();
        const during = shared.authenticate(app.key!);
        await lookups.answeredAtLeast(2);
        await shared.applications.update(root, app.id, { name: 'a', permissions: ['token:read', 'token:use'] });
        lookups.release();
        expect((await during).permissions.has('token:use')).toBe(false);
        expect((await shared.authenticate(app.key!)).permissions.has('token:use')).toBe(true);
      } finally {
        await shared.close();
        await store.cleanup(inner);
      }
    });

    it('each operation requires its permission', async () => {
      const other = await vault.caller({ permissions: ['token:read'] });
      await expect(vault.applications.create(other, { name: 'x', type: 'private' })).rejects.toThrow(/application:create/);
      await expect(vault.applications.list(other)).rejects.toThrow(/application:read/);
      await expect(vault.applications.get(other, other.applicationId)).rejects.toThrow(/application:read/);
      await expect(vault.applications.update(other, other.applicationId, { name: 'y' })).rejects.toThrow(/application:update/);
      await expect(vault.applications.regenerateKey(other, other.applicationId)).rejects.toThrow(/application:update/);
      await expect(vault.applications.delete(other, other.applicationId)).rejects.toThrow(/application:delete/);
    });

    it("another tenant's application is not found", async () => {
      const { application } = await vault.createTenant({ name: 'other' });
      const otherAdmin = await vault.authenticate(application.key);
      await expect(vault.applications.get(otherAdmin, admin.applicationId)).rejects.toThrow(NotFoundError);
      await expect(vault.applications.delete(otherAdmin, admin.applicationId)).rejects.toThrow(NotFoundError);
    });

    it('a tenant admin key given by the operator must be long enough', async () => {
      await expect(vault.createTenant({ name: 't', adminKey: 'short' })).rejects.toThrow(ValidationError);
      const { application } = await vault.createTenant({ name: 't', adminKey: 'a-long-enough-operator-key-123' });
      expect(application.key).toBe('a-long-enough-operator-key-123');
      expect((await vault.authenticate('a-long-enough-operator-key-123')).applicationType).toBe('management');
    });
  });
});
