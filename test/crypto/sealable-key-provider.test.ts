/**
 * A vault under a split master key, in process, on both stores (docs/key-custody.md): sealed it
 * answers 503 sealed with Retry-After and is not ready; the threshold of shares opens it; a seal
 * wipes the keys it had unwrapped, so even a tenant whose keys were cached answers sealed again.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { splitMasterKey } from '../../src/crypto/key-shares.js';
import { SealableKeyProvider } from '../../src/crypto/sealable-key-provider.js';
import { createFetchHandler } from '../../src/http/index.js';
import { ValidationError } from '../../src/errors/errors.js';
import { read } from '../http/helpers.js';
import { describeEachStore } from '../support/stores.js';
import { REVEAL_ALL } from '../support/tokens.js';

describeEachStore('a vault under a split master key', (store) => {
  it('opens with the threshold of shares, and a seal stops even cached keys; refusals change nothing', async () => {
    const { lines, record } = await splitMasterKey(randomBytes(32), 4, 2);
    const provider = new SealableKeyProvider(record);
    // The test vault makes its tenant at once: it starts unsealed, then is sealed.
    expect((await provider.submit(lines[0]!)).sealed).toBe(true);
    expect(await provider.submit(lines[3]!)).toEqual({ sealed: false, threshold: 2, given: 0 });
    const vault = await store.vault({ keyProvider: provider });
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
    const id = (await call('POST', '/tokens', { type: 'token', data: 'sealed away' })).body.id as string;
    expect((await call('GET', `/tokens/${id}`)).body.data).toBe('sealed away');

    expect(provider.seal()).toEqual({ sealed: true, threshold: 2, given: 0 });
    for (const [method, path, body] of [
      ['GET', `/tokens/${id}`, undefined],
      ['POST', '/tokens', { type: 'token', data: 'while sealed' }],
    ] as const) {
      const sent = await call(method, path, body);
      expect(sent.status).toBe(503);
      expect(sent.body.type).toBe('urn:tokenvault:problem:sealed');
      expect(sent.headers.get('retry-after')).toBe('30');
    }
    const notReady = await read(await handler(new Request('http://vault.test/readyz')));
    expect([notReady.status, notReady.body.type]).toEqual([503, 'urn:tokenvault:problem:sealed']);
    expect((await handler(new Request('http://vault.test/healthz'))).status).toBe(200);

    // One share is not the threshold; a repeat of it is refused and counts once.
    expect(await provider.submit(lines[1]!)).toEqual({ sealed: true, threshold: 2, given: 1 });
    await expect(provider.submit(lines[1]!)).rejects.toBeInstanceOf(ValidationError);
    expect((await call('GET', `/tokens/${id}`)).status).toBe(503);
    expect(await provider.submit(lines[2]!)).toEqual({ sealed: false, threshold: 2, given: 0 });
    expect((await handler(new Request('http://vault.test/readyz'))).status).toBe(200);
    expect((await call('GET', `/tokens/${id}`)).body.data).toBe('sealed away');
    // The write refused while sealed left nothing.
    expect(((await call('GET', '/tokens')).body.data as unknown[]).length).toBe(1);
  });
});
