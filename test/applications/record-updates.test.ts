import type { Permission } from '../../src/permissions/permissions.js';
import { expect, it } from 'vitest';
import { AuthenticationError } from '../../src/errors/errors.js';
import { describeEachStore } from '../support/stores.js';

/** Record updates change only the fields they name. */
describeEachStore('record updates', (store) => {
  it('applications.update racing regenerateKey loses neither: the new permissions stay and only the new key works', async () => {
    const vault = await store.vault();
    const admin = await vault.authenticate(vault.adminKey);
    const app = await vault.applications.create(admin, { name: 'app', type: 'private', permissions: ['token:create', 'token:read'] });
    for (let i = 0; i < 3; i++) {
      const permissions = i % 2 === 0 ? ['token:create'] : ['token:create', 'token:read'];
      const [updated, regenerated] = await Promise.all([
        vault.applications.update(admin, app.id, { name: `app ${i}`, permissions: permissions as Permission[] }),
        vault.applications.regenerateKey(admin, app.id),
      ]);
      expect(updated.permissions).toEqual(permissions);
      const caller = await vault.authenticate(regenerated.key);
      expect([...caller.permissions].sort()).toEqual(permissions);
      expect((await vault.applications.get(admin, app.id)).name).toBe(`app ${i}`);
      await expect(vault.authenticate(app.key)).rejects.toBeInstanceOf(AuthenticationError);
    }
  });
});
