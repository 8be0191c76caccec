import { expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';
import { sdkFailure, startSdkServer } from './harness.js';

const CARD = { number: '5555555555554444', expiration_month: 11, expiration_year: 2032, cvc: '321' };
const REVEAL = [
  { description: 'all', priority: 0, container: '/', transform: 'reveal' as const, permissions: ['token:create' as const, 'token:read' as const, 'token:use' as const] },
];

describeEachStore('Basis Theory SDK: token intents', (store) => {
  it('a public key creates an intent, the backend reads and converts it (bt.tokens.create({ tokenIntentId })), and deletes another', async () => {
    const server = await startSdkServer(store);
    const browser = await server.sdk(await server.key({ type: 'public', permissions: ['token-intent:create'] }));
    const backendKey = await server.key({ permissions: ['token:create', 'token:read', 'token:use', 'token-intent:read', 'token-intent:delete'], rules: REVEAL });
    const backend = await server.sdk(backendKey);

    const intent = await browser.tokenIntents.create({ type: 'card', data: CARD });
    expect(intent).toMatchObject({ id: expect.any(String), type: 'card', card: { bin: '555555', last4: '4444', brand: 'mastercard', funding: 'unknown' } });
    expect(JSON.stringify(intent)).not.toContain(CARD.number);
    expect(intent.fingerprint).toBeUndefined(); // a public application cannot reveal tokens
    // The SDK has no retrieve for intents: GET /token-intents/{id} directly.
    const read = await server.raw('GET', `/token-intents/${intent.id}`, { key: backendKey });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: intent.id, card: { last4: '4444', expiration_month: 11, expiration_year: 2032 }, fingerprint: expect.any(String) });

    const token = await backend.tokens.create({ tokenIntentId: intent.id } as never);
    expect(token).toMatchObject({ type: 'card', data: CARD, containers: ['/pci/high/'], fingerprint: read.body.fingerprint });
    expect((await server.raw('GET', `/token-intents/${intent.id}`, { key: backendKey })).status).toBe(404);
    const again = await sdkFailure(backend.tokens.create({ tokenIntentId: intent.id } as never));
    expect(again.status).toBe(404);
    expect(again.data.detail).toBe(`Token intent '${intent.id}' not found`);

    const other = await browser.tokenIntents.create({ type: 'token', data: { note: 'x' } });
    await backend.tokenIntents.delete(other.id);
    expect((await server.raw('GET', `/token-intents/${other.id}`, { key: backendKey })).status).toBe(404);
    expect((await sdkFailure(backend.tokenIntents.delete(other.id))).status).toBe(404);
  });

  it('refusals are clear 4xx answers that change nothing', async () => {
    const server = await startSdkServer(store);
    const browserKey = await server.key({ type: 'public', permissions: ['token-intent:create'] });
    const browser = await server.sdk(browserKey);
    const backendKey = await server.key({ permissions: ['token:create', 'token:read', 'token-intent:read'], rules: REVEAL });
    const intent = await browser.tokenIntents.create({ type: 'token', data: 'kept' });

    const missingPermission = await sdkFailure(browser.tokenIntents.delete(intent.id));
    expect(missingPermission.status).toBe(403);
    expect((await server.raw('GET', `/token-intents/${intent.id}`, { key: browserKey })).status).toBe(403);
    expect((await sdkFailure(browser.tokens.create({ tokenIntentId: intent.id } as never))).status).toBe(403);
    expect((await server.raw('DELETE', `/token-intents/${intent.id}`, { key: backendKey })).status).toBe(403);

    const badBodies: [unknown, string][] = [
      [{ type: 'card', data: { number: '4242' } }, 'data.number'],
      [{ type: 'card' }, 'data'],
      [{ data: 'x' }, 'type'],
      [{ type: 'token', data: 'x', extra: 1 }, 'extra'],
      ['[1]', 'body'],
    ];
    for (const [body, field] of badBodies) {
      const sent = await server.raw('POST', '/token-intents', { key: browserKey, body });
      expect(sent.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(sent.body.errors), JSON.stringify(body)).toContain(field);
    }
    expect((await server.raw('POST', '/token-intents', { key: browserKey, body: 'type=token', contentType: 'text/plain' })).status).toBe(415);
    expect((await server.raw('POST', '/token-intents', { key: browserKey, body: '{"type":' })).status).toBe(400);
    expect((await server.raw('POST', '/token-intents', { body: { type: 'token', data: 1 } })).status).toBe(401);

    const conversions: [unknown, number][] = [
      [{ token_intent_id: 42 }, 400],
      [{ token_intent_id: intent.id, type: 'token' }, 400],
      [{ token_intent_id: intent.id, data: 'other' }, 400],
      [{ token_intent_id: intent.id, containers: ['/pci/'], deduplicate_token: 'yes' }, 400],
      [{ token_intent_id: 'no-such-intent' }, 404],
    ];
    for (const [body, status] of conversions) {
      const sent = await server.raw('POST', '/tokens', { key: backendKey, body });
      expect(sent.status, JSON.stringify(body)).toBe(status);
      expect(sent.headers.get('content-type')).toContain('application/problem+json');
    }
    expect((await server.raw('GET', '/token-intents/no-such-intent', { key: backendKey })).status).toBe(404);
    // Nothing changed: the intent is there, no token was made.
    expect((await server.raw('GET', `/token-intents/${intent.id}`, { key: backendKey })).status).toBe(200);
    expect((await server.raw('GET', '/tokens', { key: backendKey })).body.data).toEqual([]);
  });
});
