/**
 * The operator entry (tokenvault/operator): key management, listing tenants and administrator
 * recovery come from `openOperator`, beside the vault; a plain Vault has none of them.
 */
import { beforeAll, expect, it } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { NotFoundError, ValidationError } from '../../src/errors/errors.js';
import { openOperator, type Operator } from '../../src/operator/index.js';
import { createVault } from '../../src/vault.js';
import { describeEachStore } from '../support/stores.js';

/** What only the operator holds: none of it may be reachable from a vault object. */
const OPERATOR_ONLY = ['keys', 'recoverAdministrator', 'listTenants', 'store'];

describeEachStore('operator entry', (store) => {
  let operator: Operator;
  let tenantId: string;
  let adminKey: string;
  beforeAll(async () => {
    operator = await openOperator({ store: store.factory()(), masterKey: generateMasterKey(), jobs: { start: false }, sweepIntervalMs: 0 });
    const { tenant, application } = await operator.vault.createTenant({ name: 'acme' });
    tenantId = tenant.id;
    adminKey = application.key;
    return () => operator.close();
  });

  it('a vault, from createVault or from the operator, has no operator tools', async () => {
    const plain = await createVault({ store: store.factory()(), masterKey: generateMasterKey(), jobs: { start: false }, sweepIntervalMs: 0 });
    try {
      for (const vault of [plain, operator.vault]) {
        expect(OPERATOR_ONLY.filter((name) => name in vault)).toEqual([]);
        expect(Object.isFrozen(vault)).toBe(true);
      }
    } finally {
      await plain.close();
    }
  });

  it('lists tenants, verifies, rotates and re-encrypts; tokens stay readable', async () => {
    const { vault } = operator;
    const admin = await vault.authenticate(adminKey);
    const permissions = ['token:create', 'token:read'] as const;
    const rules = [{ description: 'all', priority: 1, container: '/', transform: 'reveal' as const, permissions: [...permissions] }];
    const app = await vault.applications.create(admin, { name: 'writer', type: 'private', permissions: [...permissions], rules });
    const caller = await vault.authenticate(app.key);
    const token = await vault.tokens.create(caller, { type: 'token', data: 'before rotation' });
    expect((await operator.listTenants()).map((t) => t.id)).toEqual([tenantId]);
    expect(await operator.keys.verify(tenantId)).toBe(true);
    expect(await operator.keys.rotate(tenantId)).toBe(2);
    const progress: number[] = [];
    expect(await operator.keys.reencrypt(tenantId, { onProgress: (p) => progress.push(p.done) })).toBe(1);
    expect(progress).toEqual([1]);
    expect((await vault.tokens.get(caller, token.id)).data).toBe('before rotation');
  });

  it('recovers an administrator: a working management key, audited as the operator', async () => {
    const recovered = await operator.recoverAdministrator(tenantId, { name: 'Break glass' });
    expect(recovered).toMatchObject({ name: 'Break glass', type: 'management' });
    const admin = await operator.vault.authenticate(recovered.key);
    expect(admin.tenantId).toBe(tenantId);
    const logs = await operator.vault.logs.list(admin, { operation: 'application:recover' });
    expect(logs.data).toEqual([expect.objectContaining({ actor: 'operator', operation: 'application:recover', resource_id: recovered.id })]);
  });

  it('refuses an unknown tenant or a bad name, creating nothing', async () => {
    const admin = await operator.vault.authenticate(adminKey);
    const before = (await operator.vault.applications.list(admin)).data.length;
    await expect(operator.recoverAdministrator('no-such-tenant')).rejects.toBeInstanceOf(NotFoundError);
    await expect(operator.recoverAdministrator(tenantId, { name: '' })).rejects.toMatchObject({ constructor: ValidationError, errors: { name: expect.any(Array) } });
    expect((await operator.vault.applications.list(admin)).data.length).toBe(before);
  });
});
