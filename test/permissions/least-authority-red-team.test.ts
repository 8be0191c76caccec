import { expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { AuthorizationError, ConflictError } from '../../src/errors/errors.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import type { Store } from '../../src/storage/store.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { describeEachStore, type TestStore } from '../support/stores.js';
import { VISA, rejection } from '../reactors/helpers.js';
import { SUITE_START } from '../support/suite-start.js';

/*
 * What the red-team pass found after the first fixes (docs/authority.md), each as the
 * behaviour the model promises. On SQLite and PostgreSQL.
 */

const TOKEN_PERMISSIONS: Permission[] = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'];
const REVEAL_ALL: AccessRule = { priority: 0, container: '/', transform: 'reveal', permissions: TOKEN_PERMISSIONS };
const REACTOR_PERMISSIONS: Permission[] = ['reactor:create', 'reactor:read', 'reactor:update', 'reactor:delete'];
const LOOKUP = 'module.exports = async (req) => ({ raw: await req.bt.tokens.retrieve(req.args.id) })';

async function forbidden(fn: () => Promise<unknown>): Promise<string> {
  const error = await rejection(fn);
  expect(error).toBeInstanceOf(AuthorizationError);
  return error.message;
}

/** A store whose updateApplication for one actor waits at a gate: a check-then-write race, landed deterministically. */
function gated(inner: Store) {
  let hold: { actorId: string; gate: Promise<void>; reached: () => void } | null = null;
  const store = new Proxy(inner, {
    get(target, prop) {
      // Read on the store itself: its getters use private fields.
      const value = Reflect.get(target, prop) as unknown;
      if (typeof value !== 'function') return value;
      if (prop !== 'updateApplication') return value.bind(target);
      return async (...args: unknown[]) => {
        const h = hold;
        if (h !== null && (args[2] as { modifiedBy?: string }).modifiedBy === h.actorId) {
          hold = null;
          h.reached();
          await h.gate;
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const holdFor = (actorId: string) => {
    let release!: () => void;
    let reached!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const atGate = new Promise<void>((resolve) => (reached = resolve));
    hold = { actorId, gate, reached };
    return { atGate, release };
  };
  return { store, holdFor };
}

async function withVault<T>(kind: TestStore, inner: Store, store: Store, fn: (vault: TestVault) => Promise<T>): Promise<T> {
  const vault = await createTestVault({ start: SUITE_START, store });
  try {
    return await fn(vault);
  } finally {
    await vault.close();
    await kind.cleanup(inner);
  }
}

describeEachStore('least authority: red-team findings', (kind) => {
  async function open(): Promise<{ vault: TestVault; admin: Caller; owner: Caller }> {
    const vault = await kind.vault();
    const admin = await vault.authenticate(vault.adminKey);
    const owner = await vault.caller({ name: 'owner', permissions: TOKEN_PERMISSIONS, rules: [REVEAL_ALL] });
    return { vault, admin, owner };
  }

  it('an updater that cannot reveal a deduplicating token gets the same answer for every guess of its hidden data', async () => {
    const { vault, owner } = await open();
    const card = await vault.tokens.create(owner, { type: 'card', data: VISA, deduplicate_token: true });
    const ssn = await vault.tokens.create(owner, { type: 'token', data: { ssn: '123-45-6789', name: 'x' }, deduplicate_token: true });
    const browser = await vault.caller({ type: 'public', permissions: ['token:create', 'token:update'] });
    const masked = await vault.caller({ permissions: ['token:read', 'token:update'] });
    for (const caller of [browser, masked]) {
      // The right guess and a wrong one: both refused, nothing written.
      for (const number of [VISA.number, '4000056655665556']) await forbidden(() => vault.tokens.update(caller, card.id, { data: { number } }));
      for (const value of ['123-45-6789', '987-65-4321']) await forbidden(() => vault.tokens.update(caller, ssn.id, { data: { ssn: value } }));
      // Turning deduplication on over unseen data is refused whatever the data.
      const plain = await vault.tokens.create(owner, { type: 'card', data: VISA });
      await forbidden(() => vault.tokens.update(caller, plain.id, { deduplicate_token: true }));
    }
    expect((await vault.tokens.get(owner, card.id)).data).toEqual(VISA);
    // Replacing the whole data is the caller's own data, as on create.
    const whole = { ...VISA, number: '4000056655665556' };
    await expect(vault.tokens.update(masked, card.id, { data: whole })).resolves.toMatchObject({ id: card.id });
  });

  it('a caller without token:read cannot confirm guesses of a mask, fingerprint expression or search indexes', async () => {
    const { vault, owner } = await open();
    const card = await vault.tokens.create(owner, { type: 'card', data: VISA, search_indexes: ['{{ data.number | last4 }}'] });
    const browser = await vault.caller({ type: 'public', permissions: ['token:create', 'token:update'] });
    const current = await vault.tokens.get(owner, card.id);
    // The current values are refused like any other: naming them at all needs a read grant.
    await forbidden(() => vault.tokens.update(browser, card.id, { search_indexes: ['{{ data.number | last4 }}'] }));
    await forbidden(() => vault.tokens.update(browser, card.id, { containers: current.containers }));
    await forbidden(() => vault.tokens.update(browser, card.id, { fingerprint_expression: '{{ data.number }}' }));
    // A masked reader sees these settings anyway: writing their current value stays a no-op for it.
    const masked = await vault.caller({ permissions: ['token:read', 'token:update'] });
    await expect(vault.tokens.update(masked, card.id, { containers: current.containers })).resolves.toMatchObject({ id: card.id });
  });

  it('a non-administrator cannot plant rules for permissions an application does not hold yet', async () => {
    const { vault, admin, owner } = await open();
    const victim = await vault.tokens.create(owner, { type: 'card', data: VISA });
    const ops = await vault.caller({ name: 'ops', type: 'management', permissions: ['application:read', 'application:update'] });
    const reporting = await vault.caller({ name: 'reporting', type: 'private', permissions: [] });
    const minted = await vault.applicationKeys.create(ops, reporting.applicationId);
    await forbidden(() => vault.applications.update(ops, reporting.applicationId, { name: 'reporting', rules: [REVEAL_ALL] }));
    // The administrator later gives it read access: the documented default (mask) holds.
    await vault.applications.update(admin, reporting.applicationId, { name: 'reporting', permissions: ['token:read'] });
    const seen = await vault.tokens.get(await vault.authenticate(reporting.key), victim.id);
    expect(seen.data).toMatchObject({ number: 'XXXXXXXXXXXX4242' });
    // And the key ops made holds nothing of what was added after it.
    await expect(vault.tokens.get(await vault.authenticate(minted.key!), victim.id)).rejects.toBeInstanceOf(AuthorizationError);
  });

  it('a reactor bound by a non-administrator acts within the grants it was bound with, after the application is widened', async () => {
    const { vault, admin, owner } = await open();
    const onA: AccessRule = { priority: 0, container: '/a/', transform: 'reveal', permissions: ['token:read', 'token:use'] };
    const p = await vault.caller({ name: 'P', permissions: ['token:read', 'token:use'], rules: [onA] });
    const a = await vault.caller({ name: 'A', permissions: ['token:read', 'token:use', ...REACTOR_PERMISSIONS], rules: [onA] });
    const reactor = await vault.reactors.create(a, { name: 'lookup', code: LOOKUP, application: { id: p.applicationId } });
    const inA = await vault.tokens.create(owner, { type: 'card', data: VISA, containers: ['/a/'] });
    const inB = await vault.tokens.create(owner, { type: 'card', data: VISA, containers: ['/b/'] });
    await vault.applications.update(admin, p.applicationId, { name: 'P', rules: [onA, { ...onA, container: '/b/' }] });
    // P itself now reveals /b/; the reactor A bound does not.
    expect((await vault.tokens.get(await vault.authenticate(p.key), inB.id)).data).toEqual(VISA);
    const refused = await rejection(() => vault.reactors.react(a, reactor.id, { args: { id: inB.id } }));
    expect(JSON.stringify(refused)).not.toContain(VISA.number);
    expect(await vault.reactors.react(a, reactor.id, { args: { id: inA.id } })).toMatchObject({ raw: { data: VISA } });
    // Narrowing P narrows the reactor too.
    await vault.applications.update(admin, p.applicationId, { name: 'P', rules: [{ ...onA, container: '/b/' }] });
    // The reactor's read of the token fails as P's own would: not found (no existence oracle).
    await expect(vault.reactors.react(a, reactor.id, { args: { id: inA.id } })).rejects.toMatchObject({ name: 'ReactorError', kind: 'NotFoundError', status: 404 });
    // Bound by the administrator, it acts with everything P holds.
    await vault.reactors.patch(admin, reactor.id, { application: { id: p.applicationId } });
    expect(await vault.reactors.react(a, reactor.id, { args: { id: inB.id } })).toMatchObject({ raw: { data: VISA } });
  });

  it('a key made by a non-administrator acts within the grants the application had then, after it is widened', async () => {
    const { vault, admin, owner } = await open();
    const ops = await vault.caller({ name: 'ops', type: 'management', permissions: ['application:read', 'application:update'] });
    const reporting = await vault.caller({ name: 'reporting', type: 'private', permissions: [] });
    const minted = await vault.applicationKeys.create(ops, reporting.applicationId);
    const own = await vault.applicationKeys.create(admin, reporting.applicationId);
    const card = await vault.tokens.create(owner, { type: 'card', data: VISA });
    await vault.applications.update(admin, reporting.applicationId, { name: 'reporting', permissions: ['token:read'], rules: [REVEAL_ALL] });
    // The administrator's key reveals; the key ops made holds nothing it held then.
    expect((await vault.tokens.get(await vault.authenticate(own.key!), card.id)).data).toEqual(VISA);
    const minter = await vault.authenticate(minted.key!);
    await expect(vault.tokens.get(minter, card.id)).rejects.toBeInstanceOf(AuthorizationError);
    expect(minter.permissions.size).toBe(0);
  });

  it("an asynchronous run's result is withheld once its requester lost a grant, or a token it read is gone", async () => {
    const { vault, admin, owner } = await open();
    const reactor = await vault.reactors.create(admin, { name: 'capture', code: 'module.exports = async (req) => ({ raw: { captured: req.args } })' });
    const useRule: AccessRule = { priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:use'] };
    const requester = await vault.caller({ name: 'requester', permissions: ['token:use'], rules: [useRule] });
    const run = async () => {
      const card = await vault.tokens.create(owner, { type: 'card', data: VISA });
      const accepted = await vault.reactors.reactAsync(requester, reactor.id, { args: { card: `{{ ${card.id} }}` } });
      await vault.worker.runDue();
      return { card, accepted };
    };
    // Untouched, the result is there; the card deleted, it is withheld (409), not handed out.
    const first = await run();
    const me = () => vault.authenticate(requester.key);
    expect(JSON.stringify(await vault.reactors.result(await me(), reactor.id, first.accepted.id))).toContain(VISA.number);
    await vault.tokens.delete(owner, first.card.id);
    expect(await rejection(async () => vault.reactors.result(await me(), reactor.id, first.accepted.id))).toBeInstanceOf(ConflictError);
    // The requester's grant on /pci/ withdrawn: withheld too.
    const second = await run();
    await vault.applications.update(admin, requester.applicationId, { name: 'requester', rules: [{ ...useRule, container: '/general/' }] });
    const error = await rejection(async () => vault.reactors.result(await me(), reactor.id, second.accepted.id));
    expect(error).toBeInstanceOf(ConflictError);
    expect(JSON.stringify(error)).not.toContain(VISA.number);
  });

  it("a non-administrator's change of grants checked before an administrator's change is not written after it (409)", async () => {
    const inner = kind.create();
    const { store, holdFor } = gated(inner);
    await withVault(kind, inner, store, async (vault) => {
      const admin = await vault.authenticate(vault.adminKey);
      const ops = await vault.caller({ name: 'ops', type: 'management', permissions: ['application:read', 'application:update'] });
      const reporting = await vault.caller({ name: 'reporting', type: 'private', permissions: [] });
      const held = holdFor(ops.applicationId);
      // Covered when checked: no permissions, no rules. Written late, `rules: []` would turn the
      // administrator's narrow rule into the implicit mask on every container.
      const racing = vault.applications.update(ops, reporting.applicationId, { name: 'reporting', rules: [] });
      await held.atGate;
      const narrow: AccessRule[] = [{ priority: 0, container: '/pci/', transform: 'mask', permissions: ['token:read'] }];
      await vault.applications.update(admin, reporting.applicationId, { name: 'reporting', permissions: ['token:read'], rules: narrow });
      held.release();
      expect(await rejection(() => racing)).toBeInstanceOf(ConflictError);
      expect((await vault.applications.get(admin, reporting.applicationId)).rules).toEqual(narrow);
    });
  });
});
