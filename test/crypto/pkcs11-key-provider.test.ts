/**
 * The PKCS#11 key provider against a real SoftHSM token (docs/key-custody.md): tenant keys wrapped
 * inside the token, rotation, the token going away (503 with Retry-After, readiness failing,
 * nothing written) and coming back (the vault recovers by itself), and the keys it refuses.
 */
import { expect, it } from 'vitest';
import { createPkcs11KeyProvider } from '../../src/crypto/pkcs11-key-provider.js';
import { createFetchHandler } from '../../src/http/index.js';
import { ValidationError } from '../../src/errors/errors.js';
import { createSoftHsmToken, describeSoftHsm, fileToken, withTokenAway } from '../support/softhsm.js';
import { describeEachStore } from '../support/stores.js';
import { read } from '../http/helpers.js';
import { REVEAL_ALL } from '../support/tokens.js';

describeSoftHsm('the PKCS#11 key provider on SoftHSM', () => {
  const token = fileToken();
  // probeMs and retryMs 0: every use probes the token, every failed use retries it (no waiting in tests).
  const provider = () => {
    const t = token();
    return createPkcs11KeyProvider({ module: t.module, tokenLabel: t.tokenLabel, keyLabel: t.keyLabel, pin: t.pin, probeMs: 0, retryMs: 0 });
  };

  describeEachStore('tokens under a key-encrypting key in the token', (store) => {
    async function setup() {
      const vault = await store.vault({ keyProvider: await provider() });
      const app = await vault.caller({ permissions: ['token:create', 'token:read'], rules: REVEAL_ALL });
      const handler = createFetchHandler(vault);
      const call = async (method: string, path: string, body?: unknown) =>
        read(
          await handler(
            new Request(`http://vault.test${path}`, {
              method,
              headers: { 'svc-api-key': app.key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
              ...(body === undefined ? {} : { body: JSON.stringify(body) }),
            }),
          ),
        );
      return { vault, call };
    }

    it('creates, reads and rotates; the store holds only keys wrapped by the token', async () => {
      const { vault, call } = await setup();
      const created = await call('POST', '/tokens', { type: 'token', data: { secret: 'under the hsm' } });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect((await call('GET', `/tokens/${id}`)).body.data).toEqual({ secret: 'under the hsm' });
      expect(await vault.operator.keys.rotate(vault.tenantId)).toBe(2);
      expect(await vault.operator.keys.reencrypt(vault.tenantId)).toBe(1);
      expect((await call('GET', `/tokens/${id}`)).body.data).toEqual({ secret: 'under the hsm' });
      for (const purpose of ['data', 'index'] as const) {
        const records = await vault.store.listWrappedKeys(vault.tenantId, purpose);
        // Format 2: [2][IV][GCM of the key under the token's key]; a local master key writes format 1.
        for (const record of records) expect(record.wrapped[0]).toBe(2);
      }
      expect(await vault.operator.keys.verify(vault.tenantId)).toBe(true);
    });

    it('answers 503 with Retry-After while the token is away, writes nothing, and recovers by itself', async () => {
      const { vault, call } = await setup();
      const id = (await call('POST', '/tokens', { type: 'token', data: 'before' })).body.id as string;
      const handler = createFetchHandler(vault);
      const ready = async () => (await handler(new Request('http://vault.test/readyz'))).status;
      await withTokenAway(token(), async () => {
        for (const [method, path, body] of [
          ['GET', `/tokens/${id}`, undefined],
          ['POST', '/tokens', { type: 'token', data: 'while away' }],
        ] as const) {
          const sent = await call(method, path, body);
          expect(sent.status).toBe(503);
          expect(sent.headers.get('retry-after')).toBe('5');
          expect(sent.body.detail).toMatch(/HSM does not answer/);
        }
        expect(await ready()).toBe(503);
        expect((await handler(new Request('http://vault.test/healthz'))).status).toBe(200);
      });
      expect(await ready()).toBe(200);
      expect((await call('GET', `/tokens/${id}`)).body.data).toBe('before');
      const list = await call('GET', '/tokens');
      // The write refused while away left nothing behind.
      expect((list.body.data as unknown[]).length).toBe(1);
    });
  });

  it('refuses at start an extractable key, a wrong PIN, an unknown key or token, naming the option', async () => {
    const t = token();
    createSoftHsmToken({ dir: t.dir, tokenLabel: 'loose', extractable: true });
    const open = (over: Record<string, string>) => createPkcs11KeyProvider({ module: t.module, tokenLabel: t.tokenLabel, keyLabel: t.keyLabel, pin: t.pin, ...over });
    const refusal = async (over: Record<string, string>) => {
      const error = await open(over).then(
        (p) => {
          p.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ValidationError);
      return (error as ValidationError).errors;
    };
    expect(await refusal({ tokenLabel: 'loose' })).toEqual({ 'keyProvider.keyLabel': [expect.stringMatching(/must be sensitive and non-extractable/)] });
    expect(await refusal({ pin: '0000' })).toEqual({ 'keyProvider.pin': ['the token refused the PIN (TOKENVAULT_PKCS11_PIN)'] });
    expect(await refusal({ keyLabel: 'nope' })).toEqual({ 'keyProvider.keyLabel': ["the token holds no secret key labelled 'nope'"] });
    expect(await refusal({ tokenLabel: 'nope' })).toEqual({ 'keyProvider.tokenLabel': ["no PKCS#11 token labelled 'nope' is present"] });
  });
});
