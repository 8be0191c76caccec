import { expect } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import type { Vault } from '../../src/vault.js';

/**
 * Makes idempotent HTTP requests whose stored responses reveal a card (create, update, search,
 * tokenize, detokenize) or carry an API key (application create), for the plaintext scans of every
 * store. `tokenKey` must reveal cards (token:use included); `adminKey` may create applications. Returns what must not be found.
 */
export async function makeIdempotentRevealingRequests(vault: Vault, tokenKey: string, adminKey: string): Promise<{ card: { number: string; cvc: string }; apiKey: string }> {
  const handler = createFetchHandler(vault);
  const http = async (method: string, path: string, apiKey: string, body: unknown, idempotencyKey: string) => {
    const contentType = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    const headers = { 'svc-api-key': apiKey, 'content-type': contentType, 'svc-idempotency-key': idempotencyKey };
    const response = await handler(new Request(`http://vault.test${path}`, { method, headers, body: JSON.stringify(body) }));
    expect(response.status, await response.clone().text()).toBeLessThan(300);
    return (await response.json()) as { id: string; key?: string };
  };
  const card = { number: '5555555555554444', expiration_month: 2, expiration_year: 2033, cvc: '8642' };
  const idem = await http('POST', '/tokens', tokenKey, { type: 'card', data: card }, 'scan-create');
  expect(JSON.stringify(idem)).toContain(card.number); // the response does reveal the card
  await http('PATCH', `/tokens/${idem.id}`, tokenKey, { metadata: { a: 'b' } }, 'scan-update');
  await http('POST', '/tokens/search', tokenKey, { query: `id:${idem.id}` }, 'scan-search');
  await http('POST', '/tokenize', tokenKey, { c: { type: 'card', data: card } }, 'scan-tokenize');
  const detokenized = await http('POST', '/detokenize', tokenKey, { c: `{{ ${idem.id} }}` }, 'scan-detokenize');
  expect(JSON.stringify(detokenized)).toContain(card.number);
  const created = await http('POST', '/applications', adminKey, { name: 'idem-app', type: 'private', permissions: ['token:read'] }, 'scan-app');
  return { card, apiKey: created.key! };
}
