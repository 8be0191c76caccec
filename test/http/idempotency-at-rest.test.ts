import { describe, expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL } from '../support/tokens.js';
import { PRIVATE_PERMISSIONS, VISA, expectProblem, read, type Sent } from './helpers.js';

const HOUR = 3_600_000;
const ECHO = 'module.exports = async (req) => ({ raw: { args: req.args } })';

/** A vault of this store, its handler, and a private application that reveals everything. */
async function setup(vault: TestVault) {
  const handler = createFetchHandler(vault);
  const user = await vault.caller({ permissions: PRIVATE_PERMISSIONS, rules: REVEAL_ALL });
  const call = async (method: string, path: string, body?: unknown, idempotencyKey?: string, apiKey = user.key): Promise<Sent> => {
    const headers: Record<string, string> = { 'svc-api-key': apiKey };
    if (body !== undefined) headers['content-type'] = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    if (idempotencyKey !== undefined) headers['svc-idempotency-key'] = idempotencyKey;
    const init: RequestInit = { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) };
    return read(await handler(new Request(`http://vault.test${path}`, init)));
  };
  const count = async () => (await call('GET', '/tokens')).body.data.length as number;
  /** The stored record of a key of the user, as the store returns it. */
  const record = async (key: string) => {
    const claim = await vault.store.claimIdempotencyKey(
      { tenantId: user.tenantId, applicationId: user.applicationId, key, requestHash: 'probe', state: 'in_flight', status: null, body: null, createdAt: 0, expiresAt: 0 },
      vault.clock.now(),
    );
    if (claim.claimed) throw new Error(`no record for ${key}`);
    return claim.existing;
  };
  return { handler, user, call, count, record };
}

const withdrawn = (sent: Sent) => {
  const problem = expectProblem(sent, 409);
  expect(problem.detail).toMatch(/withdrawn/);
  expect(sent.text).not.toContain(VISA.number);
  expect(sent.headers.get('svc-idempotent-replayed')).toBeNull();
};

describeEachStore('stored idempotent responses at rest', (store) => {
  it('are encrypted: the stored body is not the response text, and a replay returns it exactly', async () => {
    const { call, record } = await setup(await store.vault());
    const first = await call('POST', '/tokens', { type: 'card', data: VISA }, 'enc-1');
    expect(first.status).toBe(201);
    expect(first.text).toContain(VISA.number);
    const stored = await record('enc-1');
    expect(stored.state).toBe('done');
    expect(Buffer.from(stored.body!).includes(Buffer.from(VISA.number))).toBe(false);
    expect(Buffer.from(stored.body!).includes(Buffer.from(first.text))).toBe(false);
    const again = await call('POST', '/tokens', { type: 'card', data: VISA }, 'enc-1');
    expect(again.text).toBe(first.text);
    expect(again.headers.get('svc-idempotent-replayed')).toBe('true');
  });

  it('stay readable after the tenant key is rotated', async () => {
    const vault = await store.vault();
    const { call, user } = await setup(vault);
    const first = await call('POST', '/tokens', { type: 'token', data: 'rotated-secret' }, 'rot-1');
    await vault.operator.keys.rotate(user.tenantId);
    const again = await call('POST', '/tokens', { type: 'token', data: 'rotated-secret' }, 'rot-1');
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
  });

  it('a stored response moved to another key or application does not decrypt (500, nothing disclosed)', async () => {
    const vault = await store.vault();
    const { call, user, record } = await setup(vault);
    await call('POST', '/tokens', { type: 'card', data: VISA }, 'move-from');
    const stolen = await record('move-from');
    const body = JSON.stringify({ type: 'token', data: 'x' });
    // A request under another key, whose record is then given the first record's ciphertext.
    const { requestFingerprint } = await import('../../src/http/idempotency.js');
    const { fingerprintHash } = await import('../../src/idempotency/idempotency-service.js');
    const now = vault.clock.now();
    const target = { tenantId: user.tenantId, applicationId: user.applicationId, key: 'move-to', requestHash: fingerprintHash(requestFingerprint('POST', '/tokens', body)) };
    await vault.store.claimIdempotencyKey({ ...target, state: 'in_flight', status: null, body: null, createdAt: now, expiresAt: now + HOUR }, now);
    await vault.store.completeIdempotencyKey({ ...target, claimedAt: now }, { status: 201, body: stolen.body, expiresAt: now + HOUR, tokenIds: [] });
    const replay = await call('POST', '/tokens', { type: 'token', data: 'x' }, 'move-to');
    expectProblem(replay, 500);
    expect(replay.text).not.toContain(VISA.number);
  });

  it('deleting the token withdraws the stored response: the retry answers 409, discloses nothing and creates nothing', async () => {
    const { call, count } = await setup(await store.vault());
    const created = await call('POST', '/tokens', { type: 'card', data: VISA }, 'del-1');
    const updated = await call('PATCH', `/tokens/${created.body.id}`, { metadata: { k: 'v' } }, 'del-2');
    expect(updated.text).toContain(VISA.number);
    const searched = await call('POST', '/tokens/search', { query: `id:${created.body.id}` }, 'del-3');
    expect(searched.text).toContain(VISA.number);
    expect((await call('DELETE', `/tokens/${created.body.id}`)).status).toBe(204);
    withdrawn(await call('POST', '/tokens', { type: 'card', data: VISA }, 'del-1'));
    withdrawn(await call('PATCH', `/tokens/${created.body.id}`, { metadata: { k: 'v' } }, 'del-2'));
    withdrawn(await call('POST', '/tokens/search', { query: `id:${created.body.id}` }, 'del-3'));
    expect(await count()).toBe(0);
  });

  it('/tokenize: deleting any created token withdraws the response', async () => {
    const { call } = await setup(await store.vault());
    const body = { a: { type: 'card', data: VISA }, b: { type: 'token', data: 'other' } };
    const first = await call('POST', '/tokenize', body, 'tz-1');
    expect(first.status).toBe(201);
    await call('DELETE', `/tokens/${first.body.b.id}`);
    withdrawn(await call('POST', '/tokenize', body, 'tz-1'));
  });

  it("the cvc's removal withdraws the response at the purge time, before and after the sweep", async () => {
    const vault = await store.vault();
    const { call } = await setup(vault);
    const first = await call('POST', '/tokens', { type: 'card', data: VISA }, 'cvc-1');
    expect(first.body.data.cvc).toBe(VISA.cvc);
    vault.clock.advance(HOUR - 1);
    expect((await call('POST', '/tokens', { type: 'card', data: VISA }, 'cvc-1')).text).toBe(first.text);
    vault.clock.advance(1);
    withdrawn(await call('POST', '/tokens', { type: 'card', data: VISA }, 'cvc-1'));
    expect((await vault.sweep()).cvcRemoved).toBe(1);
    withdrawn(await call('POST', '/tokens', { type: 'card', data: VISA }, 'cvc-1'));
  });

  it("the token's expiry withdraws the response, before and after the sweep", async () => {
    const vault = await store.vault();
    const { call } = await setup(vault);
    const expiresAt = new Date(vault.clock.now() + 2 * HOUR).toISOString();
    const body = { type: 'token', data: 'short-lived-secret', expires_at: expiresAt };
    expect((await call('POST', '/tokens', body, 'exp-1')).status).toBe(201);
    vault.clock.advance(2 * HOUR);
    withdrawn(await call('POST', '/tokens', body, 'exp-1'));
    expect((await vault.sweep()).expired).toBe(1);
    withdrawn(await call('POST', '/tokens', body, 'exp-1'));
  });

  it('a reactor invocation is withdrawn when a token its args detokenized is deleted', async () => {
    const vault = await store.vault();
    const { call } = await setup(vault);
    const formula = await call('POST', '/reactor-formulas', { name: 'echo', code: ECHO }, undefined, vault.adminKey);
    expect(formula.status, formula.text).toBe(201);
    const reactor = await call('POST', '/reactors', { name: 'echo', formula: { id: formula.body.id }, configuration: {} }, undefined, vault.adminKey);
    expect(reactor.status, reactor.text).toBe(201);
    const token = (await call('POST', '/tokens', { type: 'card', data: VISA })).body;
    const args = { args: { card: `{{ ${token.id} }}` } };
    const first = await call('POST', `/reactors/${reactor.body.id}/react`, args, 'react-1');
    expect(first.status).toBe(200);
    expect(first.text).toContain(VISA.number);
    expect((await call('POST', `/reactors/${reactor.body.id}/react`, args, 'react-1')).text).toBe(first.text);
    await call('DELETE', `/tokens/${token.id}`);
    withdrawn(await call('POST', `/reactors/${reactor.body.id}/react`, args, 'react-1'));
  });

  it('a detokenize response is withdrawn when a token it detokenized is deleted', async () => {
    const vault = await store.vault();
    const { call } = await setup(vault);
    const token = (await call('POST', '/tokens', { type: 'card', data: VISA })).body;
    const body = { card: `{{ ${token.id} }}` };
    const first = await call('POST', '/detokenize', body, 'detok-1');
    expect(first.status).toBe(200);
    expect(first.text).toContain(VISA.number);
    expect((await call('POST', '/detokenize', body, 'detok-1')).text).toBe(first.text);
    await call('DELETE', `/tokens/${token.id}`);
    withdrawn(await call('POST', '/detokenize', body, 'detok-1'));
  });

  it('responses that carry no token are replayed as before (a management create)', async () => {
    const vault = await store.vault();
    const { call } = await setup(vault);
    const body = { name: 'idem-app', type: 'private', permissions: ALL_TOKEN_PERMISSIONS };
    const first = await call('POST', '/applications', body, 'app-1', vault.adminKey);
    expect(first.status).toBe(201);
    expect((await call('POST', '/applications', body, 'app-1', vault.adminKey)).text).toBe(first.text);
  });
});

describe('referencedTokenIds', () => {
  it('takes the ids each route declares it carries: token routes, detokenize and reactor args only', async () => {
    const { referencedTokenIds } = await import('../../src/http/idempotency.js');
    const { ROUTES } = await import('../../src/http/routes/index.js');
    const route = (method: string, path: string) => {
      const found = ROUTES.find((r) => r.method === method && r.path === path);
      if (found === undefined || !found.auth) throw new Error(`no authenticated route ${method} ${path}`);
      return found;
    };
    expect(referencedTokenIds(route('PATCH', '/tokens/{id}'), { id: 'p' }, {}, { id: 'a', data: { nested: [{ id: 'b' }] } }).sort()).toEqual(['a', 'b', 'p']);
    expect(referencedTokenIds(route('POST', '/reactors/{id}/react'), { id: 'reactor' }, { args: { x: '{{ t1 | json: "$.n" }}', y: ['{{t2}}'] } }, { raw: {} }).sort()).toEqual([
      't1',
      't2',
    ]);
    expect(referencedTokenIds(route('POST', '/applications'), {}, {}, { id: 'app' })).toEqual([]);
    expect(referencedTokenIds(route('POST', '/detokenize'), {}, { a: ['{{ t1 }}'], id: 'not-followed' }, { a: [{ number: '4242' }], id: 'not-followed' })).toEqual(['t1']);
    // Every route that may answer token data declares it; no other route does.
    const carrying = ROUTES.filter((r) => r.auth && r.carries !== undefined).map((r) => r.path);
    expect(new Set(carrying)).toEqual(
      new Set(['/tokens', '/tokens/{id}', '/tokens/search', '/v2/tokens', '/v2/tokens/search', '/tokenize', '/detokenize', '/reactors/{id}/react']),
    );
  });
});
