// Red team 2 (the sweep's cvc concern): one tenant whose keys cannot be loaded (a key provider that
// refuses to unwrap its keys: its KMS key disabled, a per-tenant provider) must not hold back the
// cvc removal of every other tenant. Its rows come first in the cursor's order (cvc_purge_at,
// tenant, id) and stay due, so a concern that rejects at them removes no other tenant's cvc, ever.
import { expect, it } from 'vitest';
import type { Logger } from '../../src/common/logger.js';
import { LocalKeyProvider, generateMasterKey } from '../../src/crypto/key-provider.js';
import { KeyRing } from '../../src/crypto/key-ring.js';
import { Sweeper } from '../../src/jobs/sweeper.js';
import { describeEachStore } from '../support/stores.js';
import { CARD } from '../support/tokens.js';

const HOUR = 60 * 60 * 1000;
const quiet: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

describeEachStore('red team 2: the sweep', (kind) => {
  it("one tenant's keys that cannot be loaded hold back no other tenant's cvc removal", async () => {
    const masterKey = generateMasterKey();
    const vault = await kind.vault({ masterKey });
    const appA = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const first = await vault.tokens.create(appA, { type: 'card', data: CARD });
    vault.clock.advance(1000);
    const other = await vault.createTenant({ name: 'other' });
    const adminB = await vault.authenticate(other.application.key);
    const made = await vault.applications.create(adminB, { name: 'b', type: 'private', permissions: ['token:create', 'token:read'] });
    const appB = await vault.authenticate(made.key!);
    const second = await vault.tokens.create(appB, { type: 'card', data: CARD });
    vault.clock.advance(HOUR + 1000);

    // A fresh instance (cold key cache) whose provider refuses tenant A's keys.
    const local = new LocalKeyProvider(masterKey);
    const provider = {
      wrap: (key: Uint8Array, context: string) => local.wrap(key, context),
      unwrap: (wrapped: Uint8Array, context: string) => {
        if (context.includes(`:${vault.tenantId}:`)) throw new Error('KMS: key disabled');
        return local.unwrap(wrapped, context);
      },
    };
    const sweeper = new Sweeper({ store: vault.store, keys: new KeyRing(vault.store, provider, vault.clock), clock: vault.clock, logger: quiet });
    await sweeper.run('cvc').catch(() => undefined);
    await sweeper.run('cvc').catch(() => undefined);
    expect((await vault.store.getToken(other.tenant.id, second.id, vault.clock.now()))!.cvcPurgeAt).toBeNull();
    // Tenant A's stays due (its keys are not there), and the concern still reports the failure.
    expect((await vault.store.getToken(vault.tenantId, first.id, vault.clock.now()))!.cvcPurgeAt).not.toBeNull();
    await expect(sweeper.run('cvc')).rejects.toThrow(/KMS/);
  });
});
