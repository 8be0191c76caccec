import { describe, expect, it } from 'vitest';
import { AuthorizationError, ConflictError, NotFoundError, ValidationError } from '../../src/errors/errors.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { ALL_TOKEN_PERMISSIONS, CARD, REVEAL_ALL } from '../support/tokens.js';

const INTENT_PERMISSIONS: Permission[] = ['token-intent:create', 'token-intent:read', 'token-intent:delete'];
const DAY = 24 * 60 * 60 * 1000;

/** Every intent id given, as the store holds it now (null: gone), to compare before and after a refused call. */
async function intentsState(vault: TestVault, ids: string[]): Promise<unknown[]> {
  return Promise.all(ids.map((id) => vault.store.getTokenIntent(vault.tenantId, id, vault.clock.now())));
}

describeEachStore('token intents', (store) => {
  async function setup() {
    const vault = await store.vault();
    const browser = await vault.caller({ type: 'public', permissions: ['token-intent:create'], name: 'browser' });
    const backend = await vault.caller({ permissions: [...ALL_TOKEN_PERMISSIONS, ...INTENT_PERMISSIONS], rules: REVEAL_ALL, name: 'backend' });
    const masker = await vault.caller({ permissions: [...ALL_TOKEN_PERMISSIONS, ...INTENT_PERMISSIONS], name: 'masker' });
    return { vault, browser, backend, masker };
  }

  it('create shows a card summary, never the data; get, convert (the intent is gone), and the token holds the data', async () => {
    const { vault, browser, backend, masker } = await setup();
    const intent = await vault.tokenIntents.create(browser, { type: 'card', data: CARD });
    expect(intent).toEqual({
      id: expect.stringMatching(/^intent_[0-9a-f-]{36}$/),
      type: 'card',
      tenant_id: browser.tenantId,
      card: { bin: '424242', last4: '4242', brand: 'visa', funding: 'unknown', expiration_month: 12, expiration_year: 2031 },
      created_by: browser.applicationId,
      created_at: '2030-01-01T00:00:00.000+00:00',
      // It holds a cvc: one hour at most.
      expires_at: '2030-01-01T01:00:00.000+00:00',
    });
    expect(JSON.stringify(intent)).not.toContain(CARD.number);
    // The fingerprint: only to a caller that may reveal tokens of /pci/high/.
    const read = await vault.tokenIntents.get(backend, intent.id);
    expect(read.fingerprint).toMatch(/^[\w-]{43}$/);
    expect(read.card).toEqual(intent.card);
    // The summary follows the reader's token:read transform on /pci/high/, as a token's data would:
    // masked, what the card mask shows (last4, expiry); redacted or no grant, none at all.
    const masked = await vault.tokenIntents.get(masker, intent.id);
    expect(masked.fingerprint).toBeUndefined();
    expect(masked.card).toEqual({ last4: '4242', expiration_month: 12, expiration_year: 2031 });
    const redactor = await vault.caller({
      permissions: ['token:read', 'token-intent:read'],
      rules: [{ priority: 1, container: '/pci/', transform: 'redact', permissions: ['token:read'] }],
    });
    const intentOnly = await vault.caller({ permissions: ['token-intent:read'], rules: [] });
    for (const reader of [redactor, intentOnly]) {
      const shown = await vault.tokenIntents.get(reader, intent.id);
      expect(Object.keys(shown).sort()).toEqual(['created_at', 'created_by', 'expires_at', 'id', 'tenant_id', 'type']);
    }

    const token = await vault.tokens.create(backend, { token_intent_id: intent.id, metadata: { order: '7' } });
    expect(token).toMatchObject({ type: 'card', data: CARD, metadata: { order: '7' }, containers: ['/pci/high/'], created_by: backend.applicationId });
    expect(token.fingerprint).toBe(read.fingerprint);
    expect(token.id).not.toBe(intent.id);
    await expect(vault.tokenIntents.get(backend, intent.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.tokens.create(backend, { token_intent_id: intent.id })).rejects.toBeInstanceOf(NotFoundError);
    // The cvc keeps the hour it had from the intent's creation.
    vault.clock.advance(60 * 60 * 1000);
    expect((await vault.tokens.get(backend, token.id)).data).toEqual({ number: CARD.number, expiration_month: 12, expiration_year: 2031 });
  });

  it('other types: a bank summary, a plain token with no summary; the default lifetime is one day and is configurable', async () => {
    const { vault, browser, backend } = await setup();
    const bank = await vault.tokenIntents.create(browser, { type: 'bank', data: { routing_number: '021000021', account_number: '000123456789' } });
    expect(bank.bank).toEqual({ routing_number: '021000021', last4: '6789' });
    expect(bank.expires_at).toBe('2030-01-02T00:00:00.000+00:00');
    const plain = await vault.tokenIntents.create(browser, { type: 'token', data: { secret: 'horse' } });
    expect(Object.keys(plain).sort()).toEqual(['created_at', 'created_by', 'expires_at', 'id', 'tenant_id', 'type']);
    const converted = await vault.tokens.create(backend, { token_intent_id: plain.id, containers: ['/general/low/'] });
    expect(converted).toMatchObject({ type: 'token', data: { secret: 'horse' }, containers: ['/general/low/'] });

    const short = await store.vault({ tokenIntents: { expiresInMs: 10 * 60 * 1000 } });
    const app = await short.caller({ permissions: ['token-intent:create'], type: 'public' });
    expect((await short.tokenIntents.create(app, { type: 'token', data: 'x' })).expires_at).toBe('2030-01-01T00:10:00.000+00:00');
  });

  it('expiry: an expired intent is not found by any operation, and the sweep removes it', async () => {
    const { vault, browser, backend } = await setup();
    const intent = await vault.tokenIntents.create(browser, { type: 'card_number', data: '4242424242424242' });
    expect(intent.card).toMatchObject({ bin: '424242', last4: '4242', brand: 'visa' });
    vault.clock.advance(DAY);
    await expect(vault.tokenIntents.get(backend, intent.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.tokens.create(backend, { token_intent_id: intent.id })).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.tokenIntents.delete(backend, intent.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.detokenize.detokenize(backend, { n: `{{ ${intent.id} }}` })).rejects.toBeInstanceOf(ValidationError);
    const tenantId = backend.tenantId;
    expect(await vault.store.getTokenIntent(tenantId, intent.id, vault.clock.now() - DAY)).not.toBeNull();
    expect((await vault.sweep()).tokenIntentsRemoved).toBe(1);
    expect(await vault.store.getTokenIntent(tenantId, intent.id, vault.clock.now() - DAY)).toBeNull();
  });

  it('delete removes it; every refusal (permission, unknown id, malformed body) is a clear error that changes nothing', async () => {
    const { vault, browser, backend } = await setup();
    const intent = await vault.tokenIntents.create(browser, { type: 'card', data: { number: CARD.number } });
    const before = await intentsState(vault, [intent.id]);
    const tokensBefore = (await vault.tokens.list(backend, {})).data.length;
    // The public creator holds neither read, delete, nor token:create.
    await expect(vault.tokenIntents.get(browser, intent.id)).rejects.toBeInstanceOf(AuthorizationError);
    await expect(vault.tokenIntents.delete(browser, intent.id)).rejects.toBeInstanceOf(AuthorizationError);
    await expect(vault.tokens.create(browser, { token_intent_id: intent.id })).rejects.toBeInstanceOf(AuthorizationError);
    const noCreate = await vault.caller({ permissions: ['token:read', 'token:use'], rules: [] });
    await expect(vault.tokenIntents.create(noCreate, { type: 'token', data: 1 })).rejects.toBeInstanceOf(AuthorizationError);
    await expect(vault.detokenize.detokenize(browser, `{{ ${intent.id} }}`)).rejects.toBeInstanceOf(AuthorizationError);
    const bad: [unknown, string][] = [
      [null, 'body'],
      [[], 'body'],
      [{ type: 'card' }, 'data'],
      [{ type: 'card', data: null }, 'data'],
      [{ type: 'card', data: { number: '4242424242424241' } }, 'data.number'],
      [{ type: 'nope', data: 1 }, 'type'],
      [{ type: 7, data: 1 }, 'type'],
      [{ type: 'token', data: 1, containers: ['/x/'] }, 'containers'],
      [{ type: 'token', data: 1, id: 'a\u0000b' }, 'id'],
      [{ type: 'x'.repeat(65), data: 1 }, 'type'],
      [{ type: 'token', data: JSON.parse('['.repeat(70) + ']'.repeat(70)) }, 'data'],
    ];
    for (const [body, field] of bad) {
      const error = await vault.tokenIntents.create(browser, body as never).catch((e: unknown) => e);
      expect(error, JSON.stringify(body)).toBeInstanceOf(ValidationError);
      const fields = Object.keys((error as ValidationError).errors);
      expect(
        fields.some((f) => f === field || f.startsWith(`${field}[`) || f.startsWith(`${field}.`)),
        `${JSON.stringify(body)}: ${fields}`,
      ).toBe(true);
    }
    const badConversions: [unknown, string][] = [
      [{ token_intent_id: 5 }, 'token_intent_id'],
      [{ token_intent_id: '' }, 'token_intent_id'],
      [{ token_intent_id: intent.id, type: 'card' }, 'type'],
      [{ token_intent_id: intent.id, data: CARD }, 'data'],
      [{ token_intent_id: intent.id, nope: 1 }, 'nope'],
      [{ token_intent_id: intent.id, containers: 'pci' }, 'containers'],
      [{ token_intent_id: intent.id, expires_at: 'soon' }, 'expires_at'],
    ];
    for (const [body, field] of badConversions) {
      const error = await vault.tokens.create(backend, body as never).catch((e: unknown) => e);
      expect(error, JSON.stringify(body)).toBeInstanceOf(ValidationError);
      expect(Object.keys((error as ValidationError).errors), JSON.stringify(body)).toContain(field);
    }
    for (const id of ['unknown', '00000000-0000-4000-8000-000000000000']) {
      await expect(vault.tokenIntents.get(backend, id)).rejects.toThrow(`Token intent '${id}' not found`);
      await expect(vault.tokenIntents.delete(backend, id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(vault.tokens.create(backend, { token_intent_id: id })).rejects.toBeInstanceOf(NotFoundError);
    }
    // A container the converter may not create in.
    const narrow = await vault.caller({ permissions: ['token:create'], rules: [{ priority: 1, container: '/general/', transform: 'mask', permissions: ['token:create'] }] });
    await expect(vault.tokens.create(narrow, { token_intent_id: intent.id })).rejects.toBeInstanceOf(AuthorizationError);
    expect(await intentsState(vault, [intent.id])).toEqual(before);
    expect((await vault.tokens.list(backend, {})).data.length).toBe(tokensBefore);

    await vault.tokenIntents.delete(backend, intent.id);
    expect(await intentsState(vault, [intent.id])).toEqual([null]);
  });

  it('intents are the tenant’s: another tenant sees none of them', async () => {
    const { vault, browser } = await setup();
    const intent = await vault.tokenIntents.create(browser, { type: 'token', data: 'x' });
    const other = await vault.createTenant({ name: 'other' });
    const admin = await vault.authenticate(other.application.key);
    const app = await vault.applications.create(admin, { name: 'o', type: 'private', permissions: [...ALL_TOKEN_PERMISSIONS, ...INTENT_PERMISSIONS], rules: REVEAL_ALL });
    const intruder = await vault.authenticate(app.key!);
    await expect(vault.tokenIntents.get(intruder, intent.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.tokenIntents.delete(intruder, intent.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.tokens.create(intruder, { token_intent_id: intent.id })).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.detokenize.detokenize(intruder, `{{ ${intent.id} }}`)).rejects.toBeInstanceOf(ValidationError);
  });

  it('intent ids are their own namespace: no token takes one, and `{{ id }}` finds the intent (red team: a token squatting an intent id)', async () => {
    const { vault, browser, backend } = await setup();
    const intent = await vault.tokenIntents.create(browser, { type: 'card', data: CARD });
    // Anyone with token:create who learnt the id: a token of its own data under that id.
    const squatter = await vault.caller({ permissions: ['token:create'], rules: [{ priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:create'] }] });
    const ids = [intent.id, 'intent_mine', 'INTENT_mine', 'Intent_x'];
    for (const id of ids) {
      const error = await vault.tokens.create(squatter, { type: 'token', data: '4000000000000002', id, containers: ['/general/low/'] }).catch((e: unknown) => e);
      expect(error, id).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).errors['id'], id).toEqual(["must not start with 'intent_': ids of that form name token intents"]);
    }
    // Also a conversion's chosen id, and an id expression that renders to the form.
    await expect(vault.tokens.create(backend, { token_intent_id: intent.id, id: 'intent_copy' })).rejects.toBeInstanceOf(ValidationError);
    const rendered = await vault.tokens
      .create(backend, { type: 'card', data: { number: '4000000000000002' }, id: 'intent_{{ data.number | alias_card }}' })
      .catch((e: unknown) => e);
    expect((rendered as ValidationError).errors['id']).toEqual(["must not start with 'intent_': ids of that form name token intents"]);
    // Ids that merely contain the word are tokens' as before.
    expect((await vault.tokens.create(backend, { type: 'token', data: 'ok', id: 'my_intent_1' })).id).toBe('my_intent_1');
    expect((await vault.tokens.list(backend, {})).data.map((t) => t.id)).toEqual(['my_intent_1']);
    expect(await vault.detokenize.detokenize(backend, { n: `{{ ${intent.id} | json: '$.number' }}`, t: '{{ my_intent_1 }}' })).toEqual({ n: CARD.number, t: 'ok' });
    // An id not of the intent form names no intent, an id of it no token.
    await expect(vault.tokenIntents.get(backend, intent.id.slice('intent_'.length))).rejects.toBeInstanceOf(NotFoundError);
    await expect(vault.detokenize.detokenize(backend, '{{ intent_nothing }}')).rejects.toThrow("names the token 'intent_nothing', which does not exist");
  });

  it('converting needs reveal of token:read on the type’s default container (red team: conversion around the default-container rule)', async () => {
    const { vault, browser, backend, masker } = await setup();
    const intent = await vault.tokenIntents.create(browser, { type: 'card', data: CARD });
    // token:create and reveal on /general/ only: converting a card into /general/low/ and reading it is refused.
    const general: AccessRule[] = [{ priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }];
    const generalApp = await vault.caller({ permissions: ['token:create', 'token:read', 'token:use'], rules: general });
    const before = await intentsState(vault, [intent.id]);
    for (const caller of [generalApp, masker]) {
      const error = await vault.tokens.create(caller, { token_intent_id: intent.id, containers: ['/general/low/'] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthorizationError);
      expect((error as Error).message).toContain("needs the reveal transform of 'token:read' on /pci/high/");
      expect((error as Error).message).not.toContain(CARD.number);
    }
    await expect(vault.tokens.create(masker, { token_intent_id: intent.id })).rejects.toBeInstanceOf(AuthorizationError);
    expect(await intentsState(vault, [intent.id])).toEqual(before);
    expect((await vault.tokens.list(backend, {})).data).toEqual([]);
    // A plain token intent counts as in /general/high/: the /general/ app converts it.
    const plain = await vault.tokenIntents.create(browser, { type: 'token', data: 'note' });
    expect((await vault.tokens.create(generalApp, { token_intent_id: plain.id, containers: ['/general/low/'] })).data).toBe('note');
    // The backend, which may reveal /pci/high/, may put the card anywhere it may create.
    expect((await vault.tokens.create(backend, { token_intent_id: intent.id, containers: ['/general/low/'] })).data).toEqual(CARD);
  });

  it('two concurrent conversions of one intent make one token; an id conflict keeps the intent', async () => {
    const { vault, browser, backend } = await setup();
    for (let round = 0; round < 5; round++) {
      const intent = await vault.tokenIntents.create(browser, { type: 'token', data: { round } });
      const results = await Promise.allSettled([vault.tokens.create(backend, { token_intent_id: intent.id }), vault.tokens.create(backend, { token_intent_id: intent.id })]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(refused.reason).toBeInstanceOf(NotFoundError);
    }
    expect((await vault.tokens.list(backend, {})).data).toHaveLength(5);
    await vault.tokens.create(backend, { type: 'token', data: 1, id: 'taken' });
    const intent = await vault.tokenIntents.create(browser, { type: 'token', data: 2 });
    await expect(vault.tokens.create(backend, { token_intent_id: intent.id, id: 'taken' })).rejects.toBeInstanceOf(ConflictError);
    expect((await vault.tokenIntents.get(backend, intent.id)).id).toBe(intent.id);
  });

  it('deduplication on conversion matches only tokens the converter may reveal, and needs reveal on the new token', async () => {
    const { vault, browser, backend, masker } = await setup();
    const existing = await vault.tokens.create(backend, { type: 'card', data: { number: CARD.number }, containers: ['/pci/low/'] });
    const first = await vault.tokenIntents.create(browser, { type: 'card', data: { number: CARD.number } });
    // A masked converter may not ask for deduplication over data it did not write.
    await expect(vault.tokens.create(masker, { token_intent_id: first.id, deduplicate_token: true })).rejects.toBeInstanceOf(AuthorizationError);
    const duplicate = await vault.tokens.create(backend, { token_intent_id: first.id, deduplicate_token: true });
    expect(duplicate).toMatchObject({ id: existing.id, _extras: { deduplicated: true } });
    await expect(vault.tokenIntents.get(backend, first.id)).rejects.toBeInstanceOf(NotFoundError);
    // Revealing only /pci/high/: the token in /pci/low/ is not matched, a new token is made.
    const high: AccessRule[] = [{ priority: 1, container: '/pci/high/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
    const highOnly = await vault.caller({ permissions: ['token:create', 'token:read'], rules: high });
    const second = await vault.tokenIntents.create(browser, { type: 'card', data: { number: CARD.number } });
    const made = await vault.tokens.create(highOnly, { token_intent_id: second.id, deduplicate_token: true, containers: ['/pci/high/'] });
    expect(made.id).not.toBe(existing.id);
    expect(made._extras).toBeUndefined();
  });

  it('detokenization expressions resolve intents like tokens (token:use transform of the type’s default container); reactors too', async () => {
    const { vault, browser, backend, masker } = await setup();
    const intent = await vault.tokenIntents.create(browser, { type: 'card', data: CARD });
    const token = await vault.tokens.create(backend, { type: 'token', data: 'plain' });
    expect(await vault.detokenize.detokenize(backend, { card: `{{ ${intent.id} }}`, last4: `{{ ${intent.id} | json: '$.number' | last4 }}`, t: `{{ ${token.id} }}` })).toEqual({
      card: CARD,
      last4: '4242',
      t: 'plain',
    });
    // Masked token:use shows the type's default mask.
    const maskedUse = await vault.caller({ permissions: ['token:use'], rules: [{ priority: 1, container: '/', transform: 'mask', permissions: ['token:use'] }] });
    expect(await vault.detokenize.detokenize(maskedUse, `{{ ${intent.id} }}`)).toEqual({ number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2031 });
    // No grant on /pci/ at all: the intent looks missing (as a token would), nothing is returned.
    const general = await vault.caller({ permissions: ['token:use'], rules: [{ priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:use'] }] });
    await expect(vault.detokenize.detokenize(general, [`{{ ${token.id} }}`, `{{ ${intent.id} }}`])).rejects.toThrow(`names the token '${intent.id}', which does not exist`);
    // No rule of its own: token:use takes the transform of the card type's default container (the whole card).
    expect(await vault.detokenize.detokenize(masker, [`{{ ${intent.id} }}`])).toEqual([CARD]);
    // A read grant on /pci/ but no use: refused.
    const readOnly = await vault.caller({
      permissions: ['token:use', 'token:read'],
      rules: [{ priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }],
    });
    await expect(vault.detokenize.detokenize(readOnly, `{{ ${intent.id} }}`)).rejects.toBeInstanceOf(AuthorizationError);
    const reactor = await vault.reactors.create(await vault.authenticate(vault.adminKey), { name: 'echo', code: 'module.exports = async (req) => ({ raw: req.args })' });
    const out = await vault.reactors.react(backend, reactor.id, { args: { n: `{{ ${intent.id} | json: '$.number' }}` } });
    expect(out.raw).toEqual({ n: CARD.number });
    // Using an intent does not consume it.
    expect((await vault.tokenIntents.get(backend, intent.id)).id).toBe(intent.id);
  });

  it('proxy expressions resolve intents too (the vault detokenizeSource), under the token:use transform of the caller', async () => {
    const sent: string[] = [];
    const destination = (async (_url: unknown, init?: RequestInit) => {
      sent.push(new TextDecoder().decode(init?.body as Uint8Array));
      return new Response('{"ok":true}', { status: 200 });
    }) as typeof fetch;
    const vault = await store.vault({ proxy: { unsafeFetch: destination } });
    const browser = await vault.caller({ type: 'public', permissions: ['token-intent:create'] });
    const proxier = await vault.caller({ permissions: ['token:use', 'proxy:invoke'] });
    const intent = await vault.tokenIntents.create(browser, { type: 'card', data: { number: CARD.number } });
    const request = { method: 'POST', url: 'https://api.example.com', path: '/charges', query: '', headers: { 'content-type': 'application/json' } };
    const answer = await vault.proxy(proxier, { ...request, body: JSON.stringify({ number: `{{ ${intent.id} | json: '$.number' }}` }) });
    expect(answer.status).toBe(200);
    expect(JSON.parse(sent[0]!)).toEqual({ number: CARD.number });
    const nothing = await vault.caller({
      permissions: ['proxy:invoke', 'token:use'],
      rules: [{ priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:use'] }],
    });
    const refused = await vault.proxy(nothing, { ...request, body: JSON.stringify({ number: `{{ ${intent.id} }}` }) }).catch((e: unknown) => e);
    expect(sent).toHaveLength(1);
    expect(JSON.stringify(refused)).not.toContain(CARD.number);
  });
});
