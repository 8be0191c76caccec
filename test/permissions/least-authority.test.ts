import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { AuthorizationError, ConflictError } from '../../src/errors/errors.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import { createQuickJsSandbox } from '../../src/sandbox-entry.js';
import type { Sandbox, SandboxRunInput } from '../../src/sandbox/sandbox.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { VISA, rejection } from '../reactors/helpers.js';

/*
 * Authority that flowed through an indirection (a deduplicated answer, a
 * reactor's tokenize block, a binding, a recoding, a minted key, a widened grant) which the
 * endpoint's own check did not see. Each test is the finding's reproduction; docs/authority.md is
 * the table they prove. On SQLite and PostgreSQL.
 */

const TOKEN_PERMISSIONS: Permission[] = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'];
const REACTOR_PERMISSIONS: Permission[] = ['reactor:create', 'reactor:read', 'reactor:update', 'reactor:delete'];
const REVEAL_ALL: AccessRule = { priority: 0, container: '/', transform: 'reveal', permissions: TOKEN_PERMISSIONS };
const BENIGN = 'module.exports = async (req) => ({ raw: { ok: true } })';
/** Lists every token it can and writes their data into new token ids. */
const LEAK_INTO_IDS = `module.exports = async (req) => {
  const page = await req.bt.tokens.list({});
  for (const t of page.data) if (t.data && t.data.number) await req.bt.tokens.create({ id: 'leak-' + t.data.number + '-' + t.data.cvc, type: 'token', data: 'x' });
  return { raw: { ok: true } };
}`;
/** Posts what it is handed somewhere of the attacker's choosing: here, into its output. */
const CAPTURE = 'module.exports = async (req) => ({ raw: { captured: req.args } })';

/** A guessed card with a given number, otherwise the victim's. */
const guess = (number: string) => ({ ...VISA, number });
/** Luhn-valid 16-digit numbers that are not the victim's. */
function decoys(count: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const body = `400000${String(i).padStart(9, '0')}`;
    let sum = 0;
    for (let j = 0; j < body.length; j++) {
      let d = Number(body[body.length - 1 - j]);
      if (j % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
      sum += d;
    }
    const number = body + String((10 - (sum % 10)) % 10);
    if (number !== VISA.number) out.push(number);
  }
  return out;
}

interface World {
  vault: TestVault;
  admin: Caller;
  /** A private application that reveals every token (the victim's owner). */
  payments: Caller & { key: string };
  victimId: string;
}

async function world(vault: TestVault): Promise<World> {
  const admin = await vault.authenticate(vault.adminKey);
  const payments = await vault.caller({ name: 'payments', permissions: [...TOKEN_PERMISSIONS, ...REACTOR_PERMISSIONS], rules: [REVEAL_ALL] });
  // Created without deduplication, as the flaw had it.
  const victim = await vault.tokens.create(payments, { type: 'card', data: VISA, metadata: { owner: 'victim' } });
  return { vault, admin, payments, victimId: victim.id };
}

async function forbidden(fn: () => Promise<unknown>): Promise<string> {
  const error = await rejection(fn);
  expect(error).toBeInstanceOf(AuthorizationError);
  return error.message;
}

describeEachStore('least authority', (store) => {
  it('deduplication never names, nor confirms, a token the caller cannot reveal', async () => {
    const w = await world(await store.vault());
    // The victim's owner also made a deduplicating copy: opting in does not widen the match.
    const optedIn = await w.vault.tokens.create(w.payments, { type: 'card', data: VISA, deduplicate_token: true });
    const browser = await w.vault.caller({ type: 'public', permissions: ['token:create', 'token:update'] });
    const guesses = [...decoys(99).map(guess), VISA].map((data) => ({ type: 'card', data, deduplicate_token: true }));
    const answer = JSON.stringify(await w.vault.tokens.tokenize(browser, guesses));
    for (const id of [w.victimId, optedIn.id]) expect(answer).not.toContain(id);
    expect(answer).not.toContain('deduplicated');
    // A masked reader of the card: no confirmation either.
    const masked = await w.vault.caller({ permissions: ['token:create', 'token:read'] });
    const made = await w.vault.tokens.create(masked, { type: 'card', data: VISA, deduplicate_token: true });
    expect([w.victimId, optedIn.id]).not.toContain(made.id);
    expect(made._extras).toBeUndefined();
    // The victim's token is untouched.
    expect((await w.vault.tokens.get(w.payments, w.victimId)).data).toEqual(VISA);
  });

  it('a reactor tokenize block shows its invoker no more than it may read, and deduplicates only against tokens both may reveal', async () => {
    const w = await world(await store.vault());
    await w.vault.tokens.create(w.payments, { type: 'card', data: VISA, deduplicate_token: true });
    const formula = await w.vault.formulas.create(w.admin, { name: 'receipt', code: 'module.exports = async (req) => ({ tokenize: { receipt: req.args.receipt } })' });
    const reactor = await w.vault.reactors.create(w.admin, { name: 'receipt', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } });
    const invoker = await w.vault.caller({ permissions: ['token:use'] });
    await expect(w.vault.tokens.get(invoker, w.victimId)).rejects.toBeInstanceOf(AuthorizationError);
    const out = await w.vault.reactors.react(invoker, reactor.id, { args: { receipt: { type: 'card', data: VISA, deduplicate_token: true } } });
    const text = JSON.stringify(out);
    expect(text).not.toContain(w.victimId);
    expect(text).not.toContain('deduplicated');
    // The new token is shown as the invoker (no token:read) may see it: no data, though the
    // reactor's application could reveal it.
    expect(text).not.toContain(VISA.number);
    expect((out as { tokens: { receipt: { id: string } } }).tokens.receipt).not.toHaveProperty('data');
    // An invoker that may reveal the card itself gets the duplicate, as before.
    const peer = await w.vault.caller({ permissions: ['token:use', 'token:read'], rules: [REVEAL_ALL] });
    const again = (await w.vault.reactors.react(peer, reactor.id, { args: { receipt: { type: 'card', data: VISA, deduplicate_token: true } } })) as {
      tokens: { receipt: { _extras?: unknown } };
    };
    expect(again.tokens.receipt._extras).toEqual({ deduplicated: true });
  });

  it('reactor:* without administration cannot bind (or rebind) a reactor to an application it does not cover', async () => {
    const w = await world(await store.vault());
    const ops = await w.vault.caller({ name: 'ops', type: 'management', permissions: [...REACTOR_PERMISSIONS, 'log:read'] });
    const formula = await w.vault.formulas.create(ops, { name: 'sync', code: LEAK_INTO_IDS });
    await forbidden(() => w.vault.reactors.create(ops, { name: 'sync', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } }));
    const existing = await w.vault.reactors.create(ops, { name: 'sync', formula: { id: formula.id }, configuration: {} });
    await forbidden(() => w.vault.reactors.update(ops, existing.id, { name: 'sync', configuration: {}, application: { id: w.payments.applicationId } }));
    await forbidden(() => w.vault.reactors.patch(ops, existing.id, { application: { id: w.payments.applicationId } }));
    expect((await w.vault.reactors.get(w.admin, existing.id)).application).toBeUndefined();
    // The administrator still may.
    await expect(w.vault.reactors.patch(w.admin, existing.id, { application: { id: w.payments.applicationId } })).resolves.toMatchObject({
      application: { id: w.payments.applicationId },
    });
  });

  it('reactor:update does not recode a reactor or formula someone else wrote', async () => {
    const w = await world(await store.vault());
    const editor = await w.vault.caller({ name: 'editor', permissions: ['reactor:read', 'reactor:update'] });
    const inline = await w.vault.reactors.create(w.admin, { name: 'charge', code: BENIGN, configuration: { URL: 'https://psp.example' } });
    const formula = await w.vault.formulas.create(w.admin, { name: 'charge', code: BENIGN });
    const built = await w.vault.reactors.create(w.admin, { name: 'built', formula: { id: formula.id }, configuration: {} });
    const message = await forbidden(() => w.vault.reactors.patch(editor, inline.id, { code: CAPTURE }));
    expect(message).toMatch(/application that created it or a tenant administrator/);
    await forbidden(() => w.vault.reactors.update(editor, inline.id, { name: 'charge', code: CAPTURE, configuration: { URL: 'https://psp.example' } }));
    await forbidden(() => w.vault.reactors.patch(editor, inline.id, { configuration: { URL: 'https://attacker.example' } }));
    await forbidden(() => w.vault.formulas.update(editor, formula.id, { name: 'charge', code: CAPTURE }));
    // Names stay editable; the next honest invocation still runs the author's code.
    await expect(w.vault.reactors.patch(editor, inline.id, { name: 'renamed' })).resolves.toMatchObject({ name: 'renamed' });
    await expect(w.vault.formulas.update(editor, formula.id, { name: 'renamed', code: BENIGN })).resolves.toMatchObject({ name: 'renamed' });
    const card = `{{ ${w.victimId} }}`;
    for (const id of [inline.id, built.id]) expect(await w.vault.reactors.react(w.payments, id, { args: { card } })).toEqual({ raw: { ok: true } });
    // The author (here a private application) may change what its own reactor runs.
    const own = await w.vault.reactors.create(w.payments, { name: 'own', code: BENIGN });
    await expect(w.vault.reactors.patch(w.payments, own.id, { code: CAPTURE })).resolves.toMatchObject({ code: CAPTURE });
  });

  it('application:update alone mints no key, widens no grant, and a minted key is announced', async () => {
    const w = await world(await store.vault());
    const helpdesk = await w.vault.caller({ name: 'helpdesk', type: 'management', permissions: ['application:read', 'application:update'] });
    const adminId = w.admin.applicationId;
    for (const target of [adminId, w.payments.applicationId]) {
      await forbidden(() => w.vault.applicationKeys.create(helpdesk, target));
      await forbidden(() => w.vault.applications.regenerateKey(helpdesk, target));
    }
    expect(await w.vault.applicationKeys.list(w.admin, w.payments.applicationId)).toHaveLength(1);
    // Its own grants, or another's, cannot grow beyond its own.
    await forbidden(() =>
      w.vault.applications.update(helpdesk, helpdesk.applicationId, { name: 'helpdesk', permissions: ['application:read', 'application:update', 'application:create'] }),
    );
    await forbidden(() => w.vault.applications.update(helpdesk, w.payments.applicationId, { name: 'payments', permissions: ['token:read'] }));
    // Renaming gives no power and stays allowed; an application it covers may get a key.
    await expect(w.vault.applications.update(helpdesk, w.payments.applicationId, { name: 'payments (renamed)' })).resolves.toMatchObject({ name: 'payments (renamed)' });
    const reader = await w.vault.caller({ name: 'reader', type: 'management', permissions: ['application:read'] });
    await expect(w.vault.applicationKeys.create(helpdesk, reader.applicationId)).resolves.toHaveProperty('key');
    // application:create alone creates only what it covers.
    const creator = await w.vault.caller({ name: 'creator', type: 'management', permissions: ['application:create', 'application:read'] });
    await forbidden(() => w.vault.applications.create(creator, { name: 'x', type: 'private', permissions: ['token:read'], rules: [REVEAL_ALL] }));
    await expect(w.vault.applications.create(creator, { name: 'y', type: 'management', permissions: ['application:read'] })).resolves.toHaveProperty('key');
    // The administrator keeps every power.
    await expect(w.vault.applicationKeys.create(w.admin, w.payments.applicationId)).resolves.toHaveProperty('key');
  });
});

/**
 * A sandbox that holds the load check of code marked HOLD until the test lets it go: the formula
 * update is then past its authorization and before its write.
 */
function gatedSandbox(inner: Sandbox) {
  let reached!: () => void;
  let release!: () => void;
  const atGate = new Promise<void>((resolve) => (reached = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  const sandbox: Sandbox = {
    check: (code) => inner.check(code),
    async run(input: SandboxRunInput) {
      if (input.code.includes('/*HOLD*/')) {
        reached();
        await gate;
      }
      return inner.run(input);
    },
  };
  return { sandbox, atGate, release };
}

describeEachStore('least authority: a formula update racing a bind', (store) => {
  let shared: Sandbox & { close(): Promise<void> };
  beforeAll(async () => {
    shared = await createQuickJsSandbox({ workers: { size: 1 } });
  });
  afterAll(() => shared.close());

  it('a bind that lands between the check and the write makes the update a 409, and the bound reactor keeps its code', async () => {
    const gated = gatedSandbox(shared);
    const w = await world(await store.vault({ reactors: { sandbox: gated.sandbox } }));
    const author = await w.vault.caller({ name: 'author', permissions: ['token:use', ...REACTOR_PERMISSIONS] });
    const formula = await w.vault.formulas.create(author, { name: 'f', code: BENIGN });
    const update = w.vault.formulas.update(author, formula.id, { name: 'f', code: `/*HOLD*/ ${CAPTURE}` });
    await gated.atGate;
    // No reactor was bound when the author's update was checked; now the administrator binds one.
    await w.vault.reactors.create(w.admin, { name: 'bound', formula: { id: formula.id }, configuration: {}, application: { id: w.payments.applicationId } });
    gated.release();
    const error = await rejection(() => update);
    expect(error).toBeInstanceOf(ConflictError);
    expect((await w.vault.formulas.get(w.admin, formula.id)).code).toBe(BENIGN);
  });
});
