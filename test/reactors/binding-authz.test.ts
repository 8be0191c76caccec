import { expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { AuthorizationError } from '../../src/errors/errors.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import type { TestVault } from '../../src/testing/index.js';
import { createFetchHandler } from '../../src/http/index.js';
import { BASE, read } from '../http/helpers.js';
import { checkShape } from '../http/shape.js';
import { describeEachStore } from '../support/stores.js';
import { VISA, rejection } from './helpers.js';

/** Reactor code that reads a token through bt (as the reactor's application) and returns its data. */
const STEAL = 'module.exports = async (req) => ({ raw: (await req.bt.tokens.retrieve(req.args.id)).data })';
const BENIGN = 'module.exports = async (req) => ({ raw: { ok: true } })';
const REACTOR_PERMISSIONS: Permission[] = ['reactor:create', 'reactor:read', 'reactor:update', 'reactor:delete'];
const REVEAL_ALL: AccessRule = { priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] };

interface World {
  vault: TestVault;
  admin: Caller;
  /** A privileged private application: reveals every token on read. */
  payments: Caller;
  /** A private application with reactor:* whose own key reads masked data only (implicit rules). */
  attacker: Caller;
  /** A card token, created by payments. */
  cardId: string;
}

async function world(vault: TestVault): Promise<World> {
  const admin = await vault.authenticate(vault.adminKey);
  const payments = await vault.caller({ name: 'payments', permissions: ['token:create', 'token:read', 'token:use'], rules: [REVEAL_ALL] });
  const attacker = await vault.caller({ name: 'attacker', permissions: ['token:create', 'token:read', 'token:use', ...REACTOR_PERMISSIONS] });
  const card = await vault.tokens.create(payments, { type: 'card', data: VISA });
  return { vault, admin, payments, attacker, cardId: card.id! };
}

async function forbidden(fn: () => Promise<unknown>): Promise<string> {
  const error = await rejection(fn);
  expect(error).toBeInstanceOf(AuthorizationError);
  return error.message;
}

describeEachStore('binding a reactor to an application needs every grant of it', (store) => {
  it('an application cannot bind a reactor to an application it does not cover (403, nothing created)', async () => {
    const w = await world(await store.vault());
    // Its own key sees the card masked.
    expect((await w.vault.tokens.get(w.attacker, w.cardId)).data).toMatchObject({ number: 'XXXXXXXXXXXX4242' });
    const formula = await w.vault.formulas.create(w.attacker, { name: 'steal', code: STEAL });
    const message = await forbidden(() =>
      w.vault.reactors.create(w.attacker, { name: 'r', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } }),
    );
    expect(message).toBe(`Binding a reactor to application '${w.payments.applicationId}' needs every permission and access grant that application holds`);
    expect((await w.vault.reactors.list(w.admin)).data).toEqual([]);
  });

  it('an application that holds every grant, and a management application, may bind', async () => {
    const w = await world(await store.vault());
    const peer = await w.vault.caller({
      name: 'peer',
      permissions: ['token:create', 'token:read', 'token:use', 'token:search', ...REACTOR_PERMISSIONS],
      rules: [{ ...REVEAL_ALL, permissions: ['token:create', 'token:read', 'token:use', 'token:search'] }],
    });
    const formula = await w.vault.formulas.create(peer, { name: 'steal', code: STEAL });
    const reactor = await w.vault.reactors.create(peer, { name: 'r', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } });
    expect(reactor.application).toEqual({ id: w.payments.applicationId, name: 'payments', type: 'private' });
    // Binding to itself is always allowed.
    await expect(
      w.vault.reactors.create(w.attacker, { name: 'own', formula: { id: formula.id }, configuration: {}, application: { id: w.attacker.applicationId } }),
    ).resolves.toMatchObject({ application: { id: w.attacker.applicationId } });
    await expect(
      w.vault.reactors.create(w.admin, { name: 'admin', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } }),
    ).resolves.toMatchObject({ application: { id: w.payments.applicationId } });
  });

  it('the formula of a reactor bound to an application the caller does not cover keeps its code (403); name and description may change', async () => {
    const w = await world(await store.vault());
    // The attacker wrote the formula (so the author rule lets it recode), the administrator bound it.
    const formula = await w.vault.formulas.create(w.attacker, { name: 'charge', code: BENIGN });
    const reactor = await w.vault.reactors.create(w.admin, { name: 'charge', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } });
    const message = await forbidden(() => w.vault.formulas.update(w.attacker, formula.id, { name: 'charge', code: STEAL }));
    expect(message).toContain(`reactor '${reactor.id}'`);
    expect(message).not.toContain(w.payments.applicationId);
    // Declarations change what the code receives: the same rule.
    await forbidden(() => w.vault.formulas.update(w.attacker, formula.id, { name: 'charge', code: BENIGN, request_parameters: [{ name: 'id', type: 'string' }] }));
    expect((await w.vault.formulas.get(w.admin, formula.id)).code).toBe(BENIGN);
    // The invocation still runs the administrator's code as payments.
    expect(await w.vault.reactors.react(w.attacker, reactor.id, { args: { id: w.cardId } })).toEqual({ raw: { ok: true } });

    await expect(w.vault.formulas.update(w.attacker, formula.id, { name: 'renamed', description: 'd', code: BENIGN })).resolves.toMatchObject({ name: 'renamed' });
    // The administrator may change it.
    await expect(w.vault.formulas.update(w.admin, formula.id, { name: 'charge', code: STEAL })).resolves.toMatchObject({ code: STEAL });
  });

  it('a formula used only by unbound reactors, or by reactors bound to covered applications, may change', async () => {
    const w = await world(await store.vault());
    const formula = await w.vault.formulas.create(w.attacker, { name: 'f', code: BENIGN });
    await w.vault.reactors.create(w.admin, { name: 'unbound', formula: { id: formula.id }, configuration: {} });
    await w.vault.reactors.create(w.admin, { name: 'own', formula: { id: formula.id }, configuration: {}, application: { id: w.attacker.applicationId } });
    await expect(w.vault.formulas.update(w.attacker, formula.id, { name: 'f', code: STEAL })).resolves.toMatchObject({ code: STEAL });
  });

  it('a bound reactor beyond the first page of reactors is found', async () => {
    const w = await world(await store.vault());
    const formula = await w.vault.formulas.create(w.attacker, { name: 'f', code: BENIGN });
    for (let i = 0; i < 100; i++) await w.vault.reactors.create(w.admin, { name: `unbound ${i}`, formula: { id: formula.id }, configuration: {} });
    await w.vault.reactors.create(w.admin, { name: 'bound', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } });
    await forbidden(() => w.vault.formulas.update(w.attacker, formula.id, { name: 'f', code: STEAL }));
  });

  it('PUT on a reactor bound to an uncovered application is refused, whatever it changes; rebinding to one too', async () => {
    const w = await world(await store.vault());
    const formula = await w.vault.formulas.create(w.admin, { name: 'f', code: BENIGN });
    const bound = await w.vault.reactors.create(w.admin, { name: 'bound', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } });
    const same = { name: 'bound', configuration: {}, application: { id: w.payments.applicationId } };
    const message = await forbidden(() => w.vault.reactors.update(w.attacker, bound.id, same));
    expect(message).toBe(`Changing reactor '${bound.id}' needs every permission and access grant of the application it is bound to`);
    await forbidden(() => w.vault.reactors.update(w.attacker, bound.id, { name: 'unbound', configuration: {} }));
    await forbidden(() => w.vault.reactors.update(w.attacker, bound.id, { name: 'rebound', configuration: {}, application: { id: w.attacker.applicationId } }));
    expect(await w.vault.reactors.get(w.admin, bound.id)).toMatchObject({ name: 'bound', application: { id: w.payments.applicationId } });

    // An unbound reactor of the attacker's cannot be rebound to payments either.
    const own = await w.vault.reactors.create(w.attacker, { name: 'own', formula: { id: formula.id }, configuration: {} });
    await forbidden(() => w.vault.reactors.update(w.attacker, own.id, { name: 'own', configuration: {}, application: { id: w.payments.applicationId } }));
    await expect(w.vault.reactors.update(w.attacker, own.id, { name: 'own', configuration: {}, application: { id: w.attacker.applicationId } })).resolves.toMatchObject({
      application: { id: w.attacker.applicationId },
    });
    await expect(w.vault.reactors.update(w.admin, bound.id, { ...same, name: 'renamed' })).resolves.toMatchObject({ name: 'renamed' });
  });

  it('gets and lists show the application only to callers that could bind it', async () => {
    const w = await world(await store.vault());
    const formula = await w.vault.formulas.create(w.admin, { name: 'f', code: BENIGN });
    const bound = await w.vault.reactors.create(w.admin, { name: 'bound', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } });
    const own = await w.vault.reactors.create(w.admin, { name: 'own', formula: { id: formula.id }, configuration: {}, application: { id: w.attacker.applicationId } });

    expect((await w.vault.reactors.get(w.attacker, bound.id)).application).toEqual({ redacted: true });
    const listed = (await w.vault.reactors.list(w.attacker)).data;
    expect(listed.map((r) => r.application)).toEqual([{ redacted: true }, { id: w.attacker.applicationId, name: 'attacker', type: 'private' }]);
    expect(JSON.stringify(listed)).not.toContain(w.payments.applicationId);
    expect((await w.vault.reactors.get(w.admin, bound.id)).application).toEqual({ id: w.payments.applicationId, name: 'payments', type: 'private' });
    expect((await w.vault.reactors.get(w.attacker, own.id)).application).toMatchObject({ id: w.attacker.applicationId });
  });

  it('inline code: binding needs cover, and changing the code of a bound reactor (PUT or PATCH) needs the same authority as its configuration', async () => {
    const w = await world(await store.vault());
    const message = await forbidden(() => w.vault.reactors.create(w.attacker, { name: 'r', code: STEAL, application: { id: w.payments.applicationId } }));
    expect(message).toContain('needs every permission and access grant that application holds');
    const bound = await w.vault.reactors.create(w.admin, {
      name: 'charge',
      code: BENIGN,
      configuration: { URL: 'https://psp.example' },
      application: { id: w.payments.applicationId },
    });
    // The confused deputy: the attacker recodes the administrator's reactor to read as payments.
    await forbidden(() => w.vault.reactors.patch(w.attacker, bound.id, { code: STEAL }));
    await forbidden(() => w.vault.reactors.update(w.attacker, bound.id, { name: 'charge', code: STEAL, application: { id: w.payments.applicationId } }));
    await forbidden(() => w.vault.reactors.patch(w.attacker, bound.id, { configuration: { URL: 'https://evil.example' } }));
    // Unbinding is a change of a bound reactor too; so is a rename (any change needs cover).
    await forbidden(() => w.vault.reactors.patch(w.attacker, bound.id, { application: null }));
    expect(await w.vault.reactors.get(w.admin, bound.id)).toMatchObject({
      code: BENIGN,
      configuration: { URL: 'https://psp.example' },
      application: { id: w.payments.applicationId },
    });
    expect(await w.vault.reactors.react(w.attacker, bound.id, { args: { id: w.cardId } })).toEqual({ raw: { ok: true } });
    // Rebinding an unbound reactor of its own to payments by PATCH is a bind.
    const own = await w.vault.reactors.create(w.attacker, { name: 'own', code: STEAL });
    await forbidden(() => w.vault.reactors.patch(w.attacker, own.id, { application: { id: w.payments.applicationId } }));
    // The administrator may recode it; the attacker may recode its own unbound reactor.
    await expect(w.vault.reactors.patch(w.admin, bound.id, { code: STEAL })).resolves.toMatchObject({ code: STEAL });
    await expect(w.vault.reactors.patch(w.attacker, own.id, { code: BENIGN })).resolves.toMatchObject({ code: BENIGN });
  });

  it('deleting a bound reactor is not an escalation and stays allowed', async () => {
    const w = await world(await store.vault());
    const formula = await w.vault.formulas.create(w.admin, { name: 'f', code: BENIGN });
    const bound = await w.vault.reactors.create(w.admin, { name: 'bound', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } });
    await w.vault.reactors.delete(w.attacker, bound.id);
    await w.vault.formulas.delete(w.attacker, formula.id);
  });

  it('over HTTP: binding is a 403 problem, and the withheld application fits the documented Reactor schema', async () => {
    const vault = await store.vault();
    const w = await world(vault);
    const attacker = await vault.caller({ name: 'attacker http', permissions: ['token:use', ...REACTOR_PERMISSIONS] });
    const handler = createFetchHandler(vault);
    const call = async (method: string, path: string, key: string, body?: unknown) =>
      read(
        await handler(
          new Request(BASE + path, { method, headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }),
        ),
      );
    const doc = (await call('GET', '/openapi.json', attacker.key)).body;
    const formula = await call('POST', '/reactor-formulas', attacker.key, { name: 'steal', code: STEAL });
    const refused = await call('POST', '/reactors', attacker.key, {
      name: 'r',
      formula: { id: formula.body.id },
      configuration: {},
      application: { id: w.payments.applicationId },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toMatch(/needs every permission and access grant that application holds/);

    await call('POST', '/reactors', vault.adminKey, { name: 'r', formula: { id: formula.body.id }, configuration: {}, application: { id: w.payments.applicationId } });
    const listed = await call('GET', '/reactors', attacker.key);
    expect(listed.body.data[0].application).toEqual({ redacted: true });
    checkShape(doc, 'Reactor', listed.body.data[0]);
  });
});
