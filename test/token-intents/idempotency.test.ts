/**
 * A held reactor result must not outlive the token intent its args detokenized
 * (docs/token-intents.md): once converted or deleted, the vault no longer holds that data there.
 */
import { expect, it } from 'vitest';
import { expectProblem, harness } from '../http/helpers.js';
import { describeEachStore } from '../support/stores.js';

const KEY = 'SVC-IDEMPOTENCY-KEY';
const ECHO = 'module.exports = async (req) => ({ raw: req.args })';

describeEachStore('token intents under idempotency keys', (store) => {
  it('a replay of a reactor run that detokenized an intent is withheld once the intent was converted', async () => {
    const h = await harness({}, store);
    const browser = (await h.vault.caller({ type: 'public', permissions: ['token-intent:create'] })).key;
    // Converting needs reveal of token:read on the type's default container (docs/token-intents.md).
    const rules = [{ priority: 0, container: '/', transform: 'reveal' as const, permissions: ['token:create' as const, 'token:read' as const, 'token:use' as const] }];
    const backend = (await h.vault.caller({ name: 'backend', permissions: ['token:create', 'token:read', 'token:use'], rules })).key;
    const reactor = await h.call('POST', '/reactors', { key: h.adminKey, body: { name: 'echo', code: ECHO } });
    const intent = await h.call('POST', '/token-intents', { key: browser, body: { type: 'card_number', data: '4000056655665556' } });
    expect(intent.status, intent.text).toBe(201);
    const react = () => h.call('POST', `/reactors/${reactor.body.id}/react`, { key: backend, body: { args: { n: `{{ ${intent.body.id} }}` } }, headers: { [KEY]: 'k-1' } });
    expect((await react()).body.raw).toEqual({ n: '4000056655665556' });
    const replay = await react();
    expect(replay.headers.get('svc-idempotent-replayed')).toBe('true');
    expect((await h.call('POST', '/tokens', { key: backend, body: { token_intent_id: intent.body.id } })).status).toBe(201);
    const after = await react();
    expectProblem(after, 409);
    expect(after.text).not.toContain('4000056655665556');
    await h.vault.close();
  });
});
