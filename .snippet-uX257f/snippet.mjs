import { createVault, createPkcs11KeyProvider } from 'tokenvault';
import { createSqliteStore } from 'tokenvault/sqlite';

const keyProvider = await createPkcs11KeyProvider({
  module: '/usr/lib/softhsm/libsofthsm2.so',
  tokenLabel: 'tokenvault',
  keyLabel: 'tokenvault-kek',
  pin: process.env.TOKENVAULT_PKCS11_PIN,
});
const vault = await createVault({ store: createSqliteStore({ filename: 'vault.db' }), keyProvider });
const { tenant } = await vault.createTenant({ name: 'acme' }); // its keys are wrapped in the token
await vault.close(); // closes the store and the PKCS#11 session

console.log(JSON.stringify({ tenant: typeof tenant.id }));
