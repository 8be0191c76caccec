/**
 * The vault's first principle as a property (issue 10): no sequence of operations lets a caller
 * learn more about a token's data than its token:read transform on that token reveals (token:use
 * counts too: it hands the data to reactors the caller runs).
 *
 * fast-check draws applications (public and private, random permissions and rules on random
 * containers), tokens owned by a revealing application, and a sequence of creates, updates of
 * every attribute, tokenizes, gets (also under idempotency keys, replayed), lists, searches, dedupes, detokenizations (token:use and
 * POST /detokenize) and reactor creations (from a formula or with inline code), recodings (formula
 * PUT, inline-code PATCH), rebindings (PUT, PATCH) and invocations by those applications, sessions
 * (created by one application, authorized by another, then acting like any caller) and application
 * keys (added, listed, used, deleted). After every step:
 * - no response or error carries a secret (card number, cvc, string token) the reference model
 *   (reference-model.ts) says its caller cannot know, nor a fingerprint of a token it cannot reveal;
 * - list and search return exactly the tokens, and count exactly the tokens, the model allows;
 * - an operation that changes what a token discloses, shortens its life, or makes code run as an
 *   application succeeded only if the model says the caller was entitled to it.
 * - a session is authorized exactly when a private application gives some of its own grants, and
 *   acts with no more than them and its authorizer's; a key is shown once, never listed, and dead once deleted.
 *
 * CI runs a fixed seed and a bounded number of runs; `npm run fuzz` runs many more with new seeds.
 */
import fc from 'fast-check';
import type { CreateTokenInput } from '../../src/tokens/token-input.js';
import { expect, it } from 'vitest';
import type { Caller } from '../../src/caller.js';
import { VaultError } from '../../src/errors.js';
import type { AccessRule, Permission, Transform } from '../../src/permissions.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import {
  type ModelApp,
  type ModelToken,
  RULE_CONTAINERS,
  TOKEN_CONTAINERS,
  TOKEN_PERMISSIONS,
  learn,
  modelCovers,
  modelTransform,
  secretsOf,
} from './reference-model.js';

const FUZZ_RUNS = Number(process.env.TOKENVAULT_FUZZ_RUNS ?? 0);
const PUBLIC: Permission[] = ['token:create', 'token:update'];
const PRIVATE: Permission[] = [...TOKEN_PERMISSIONS, 'reactor:create', 'reactor:read', 'reactor:update'];

const EXFIL = `module.exports = async function (req) {
  let got = null;
  if (req.bt) { try { got = await req.bt.tokens.retrieve(req.args.target); } catch (e) { got = String(e && e.message); } }
  return { raw: { args: req.args, got } };
};`;
const BENIGN = 'module.exports = async function (req) { return { raw: { ok: true } }; };';

interface AppSpec {
  type: 'public' | 'private';
  permissions: Permission[];
  rules: AccessRule[];
}

const rulesOf = (allowed: Permission[]) =>
  fc.array(
    fc.record({
      priority: fc.integer({ min: 0, max: 3 }),
      container: fc.constantFrom(...RULE_CONTAINERS),
      transform: fc.constantFrom<Transform>('reveal', 'mask', 'redact'),
      permissions: fc.subarray(allowed, { minLength: 1 }),
    }),
    { maxLength: 3 },
  );

const appSpec: fc.Arbitrary<AppSpec> = fc.oneof(
  fc.record({ type: fc.constant('public' as const), permissions: fc.subarray(PUBLIC, { minLength: 1 }), rules: rulesOf(PUBLIC) }),
  fc.record({ type: fc.constant('private' as const), permissions: fc.subarray(PRIVATE, { minLength: 1 }), rules: rulesOf([...TOKEN_PERMISSIONS]) }),
);

const CHANGES = ['mask', 'fingerprint', 'containers', 'search', 'expires', 'data', 'metadata'] as const;
const n = fc.nat(50);
const op = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), actor: n, container: n, guess: fc.option(n), dedupe: fc.boolean(), mask: fc.boolean(), card: fc.boolean() }),
  fc.record({ kind: fc.constant('update' as const), actor: n, target: n, change: fc.constantFrom(...CHANGES), container: n }),
  fc.record({ kind: fc.constant('get' as const), actor: n, target: n }),
  // A read under an idempotency key naming the token: a later one by the same actor is a replay, or a 409 once something changed.
  // Weighted, on few actors and tokens: replays need the same actor reading the same token again.
  { arbitrary: fc.record({ kind: fc.constant('replay' as const), actor: fc.nat(2), target: fc.nat(2), byOwner: fc.boolean(), touch: fc.boolean() }), weight: 3 },
  fc.record({ kind: fc.constant('list' as const), actor: n, type: fc.constantFrom('card', 'token', null) }),
  fc.record({ kind: fc.constant('search' as const), actor: n, term: fc.constantFrom('type', 'container', 'data'), target: n, container: n }),
  fc.record({ kind: fc.constant('tokenize' as const), actor: n, container: n }),
  fc.record({ kind: fc.constant('use' as const), actor: n, target: n }),
  fc.record({ kind: fc.constant('detokenize' as const), actor: n, target: n, filtered: fc.boolean() }),
  fc.record({ kind: fc.constant('reactor' as const), actor: n, app: fc.option(n), inline: fc.boolean() }),
  fc.record({ kind: fc.constant('recode' as const), actor: n, reactor: n }),
  fc.record({ kind: fc.constant('rebind' as const), actor: n, reactor: n, app: n }),
  fc.record({ kind: fc.constant('invoke' as const), actor: n, reactor: n, target: n, detokenize: fc.boolean() }),
  // A session made by one application and authorized by another with some token permissions: it then acts as an actor.
  fc.record({ kind: fc.constant('session' as const), actor: n, authorizer: n, permissions: fc.subarray([...TOKEN_PERMISSIONS], { minLength: 1 }), within: fc.boolean() }),
  // The administrator adds a key to an application, lists its keys, uses the key, deletes it.
  fc.record({ kind: fc.constant('key' as const), actor: n }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

interface Actor {
  model: ModelApp;
  caller: Caller;
}
interface Reactor {
  id: string;
  /** null: the reactor has inline code (recoded by PUT or PATCH of the reactor itself). */
  formulaId: string | null;
  /** Who wrote the code that runs now; null: the benign code of the setup. */
  author: Actor | null;
  app: ModelApp | null;
}

/** Unique secrets per run, so no value can be confused with another token's. */
class Secrets {
  #used = new Set<string>();
  #rng: () => number;
  constructor(seed: number) {
    let state = seed >>> 0 || 1;
    this.#rng = () => ((state = (state * 1103515245 + 12345) >>> 0) / 2 ** 32);
  }
  #fresh(make: () => string): string {
    for (;;) {
      const value = make();
      if (!this.#used.has(value)) return this.#used.add(value), value;
    }
  }
  digits(count: number): string {
    return Array.from({ length: count }, () => Math.floor(this.#rng() * 10)).join('');
  }
  card(): string {
    return this.#fresh(() => luhn(`4${this.digits(14)}`));
  }
  cvc(): string {
    return this.#fresh(() => this.digits(3));
  }
  text(): string {
    return this.#fresh(() => `S3CR3T-${this.digits(10)}`);
  }
}

function luhn(body: string): string {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return body + String((10 - (sum % 10)) % 10);
}

/** Every string leaf of a value. */
function leaves(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((item) => leaves(item, out));
  else if (value !== null && typeof value === 'object') Object.values(value).forEach((item) => leaves(item, out));
  return out;
}

/** Every object in a value that has an `id` and a `fingerprint`. */
function fingerprinted(value: unknown, out: { id: unknown }[] = []): { id: unknown }[] {
  if (Array.isArray(value)) value.forEach((item) => fingerprinted(item, out));
  else if (value !== null && typeof value === 'object') {
    if ('fingerprint' in value) out.push(value as unknown as { id: unknown });
    Object.values(value).forEach((item) => fingerprinted(item, out));
  }
  return out;
}

class World {
  readonly known = new Map<string, Set<string>>();
  /** Every secret that ever existed in the run: a value patched away is still a secret. */
  readonly secrets = new Set<string>();
  readonly tokenIds: string[] = [];
  readonly customMask = new Set<string>();
  readonly indexed = new Set<string>();
  /** The disclosure attributes this run set on each token (JSON text), to tell a change from a rewrite of the same value. */
  readonly attributes = new Map<string, Record<string, string>>();
  readonly reactors: Reactor[] = [];
  state = new Map<string, ModelToken>();

  constructor(
    readonly vault: TestVault,
    readonly owner: Actor,
    readonly admin: Caller,
    readonly actors: Actor[],
    readonly secretSource: Secrets,
  ) {}

  knows(app: ModelApp, values: Iterable<string>): void {
    let set = this.known.get(app.id);
    if (!set) this.known.set(app.id, (set = new Set()));
    for (const value of values) set.add(value);
  }

  /** The live tokens, as the owner (reveal on everything) reads them. */
  async refresh(): Promise<void> {
    const next = new Map<string, ModelToken>();
    let start: string | undefined;
    for (;;) {
      const page = await this.vault.tokens.list(this.owner.caller, { size: 100, ...(start ? { start } : {}) });
      for (const view of page.data) {
        const token: ModelToken = {
          id: view.id,
          type: view.type,
          containers: view.containers ?? [],
          data: view.data,
          expiresAt: view.expires_at ?? null,
          customMask: this.customMask.has(view.id),
        };
        next.set(view.id, token);
        secretsOf(token).forEach((secret) => this.secrets.add(secret));
      }
      const cursor = (page.pagination as { next?: string | null }).next;
      if (!cursor) break;
      start = cursor;
    }
    this.state = next;
    for (const actor of [this.owner, ...this.actors]) {
      const set = this.known.get(actor.model.id) ?? new Set<string>();
      learn(actor.model, next.values(), set);
      this.known.set(actor.model.id, set);
    }
  }

  /** Fails when `response` shows a secret none of `readers` may know, or a fingerprint `reader` may not see. */
  check(label: string, response: unknown, readers: Actor[], fingerprintReader: Actor | null): void {
    const allowed = new Set(readers.flatMap((reader) => [...(this.known.get(reader.model.id) ?? [])]));
    const text = JSON.stringify(response) ?? '';
    const values = new Set(leaves(response));
    for (const secret of this.secrets) {
      if (allowed.has(secret)) continue;
      // Long secrets anywhere in the text; a 3-digit cvc only as a whole value.
      const shown = secret.length >= 8 ? text.includes(secret) : values.has(secret);
      expect(shown, `${label} shows a secret its caller may not know`).toBe(false);
    }
    if (fingerprintReader === null) return;
    for (const object of fingerprinted(response)) {
      const token = this.state.get(String(object.id));
      const reveal = token !== undefined && modelTransform(fingerprintReader.model, 'token:read', token.containers) === 'reveal';
      expect(reveal, `${label} shows the fingerprint of ${String(object.id)} to a caller that cannot reveal it`).toBe(true);
    }
  }
}

async function attempt<T>(label: string, world: World, readers: Actor[], fn: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    // Refusals are expected; anything else is a 500 an attacker could provoke.
    if (!(error instanceof VaultError)) throw error;
    world.check(`${label} (error)`, { message: error.message, errors: (error as { errors?: unknown }).errors }, readers, null);
    return { ok: false };
  }
}

async function step(world: World, o: Op): Promise<void> {
  const { vault, actors, secretSource } = world;
  const actor = actors[o.actor % actors.length]!;
  const pick = (i: number) => world.tokenIds[i % world.tokenIds.length]!;
  const container = (i: number) => TOKEN_CONTAINERS[i % TOKEN_CONTAINERS.length]!;
  const label = `${o.kind} by ${actor.model.type} ${JSON.stringify(actor.model.permissions)} ${JSON.stringify(actor.model.rules)}`;

  switch (o.kind) {
    case 'create': {
      const guessed = o.guess === null ? undefined : world.state.get(pick(o.guess));
      let body: Record<string, unknown>;
      if (o.card) {
        // A guess of another token's number: the attacker knows the value, the vault must not confirm more.
        const number = guessed?.type === 'card' ? (guessed.data as { number: string }).number : secretSource.card();
        const data = { number, cvc: secretSource.cvc() };
        body = { type: 'card', data, containers: [container(o.container)], deduplicate_token: o.dedupe, ...(o.mask ? { mask: { number: '{{ data.number }}' } } : {}) };
      } else {
        const data = typeof guessed?.data === 'string' ? guessed.data : secretSource.text();
        body = { type: 'token', data, containers: [container(o.container)], deduplicate_token: o.dedupe, ...(o.mask ? { mask: '{{ data }}' } : {}) };
      }
      world.knows(actor.model, secretsOf({ type: body.type as string, data: body.data }));
      const result = await attempt(label, world, [actor], () => vault.tokens.create(actor.caller, body as unknown as CreateTokenInput));
      if (result.ok) {
        if (!world.tokenIds.includes(result.value.id)) world.tokenIds.push(result.value.id);
        if (o.mask && !result.value._extras?.deduplicated) world.customMask.add(result.value.id);
      }
      await world.refresh();
      if (result.ok) world.check(label, result.value, [actor], actor);
      return;
    }
    case 'update': {
      const id = pick(o.target);
      const before = world.state.get(id);
      if (!before) return;
      const isCard = before.type === 'card';
      const future = new Date(vault.clock.now() + 2_000).toISOString();
      const patch: Record<string, unknown> = {
        mask: { mask: isCard ? { number: '{{ data.number }}', cvc: '{{ data.cvc }}' } : '{{ data }}' },
        fingerprint: { fingerprint_expression: isCard ? '{{ data.number | slice: 0, 2 }}' : '{{ data | slice: 0, 2 }}' },
        containers: { containers: [container(o.container)] },
        search: { search_indexes: [isCard ? '{{ data.number }}' : '{{ data }}'] },
        expires: { expires_at: future },
        data: { data: isCard ? { number: secretSource.card() } : secretSource.text() },
        metadata: { metadata: { note: 'n' } },
      }[o.change]!;
      if (o.change === 'data') world.knows(actor.model, secretsOf({ type: before.type, data: patch.data }));
      const set = world.attributes.get(id) ?? {};
      const value = JSON.stringify(Object.values(patch)[0]);
      // Writing an attribute's current value again discloses nothing new.
      const unchanged = o.change === 'containers' ? before.containers.join() === container(o.container) : set[o.change] === value;
      const result = await attempt(label, world, [actor], () => vault.tokens.update(actor.caller, id, patch));
      if (result.ok) {
        const discloses = o.change === 'mask' || o.change === 'fingerprint' || o.change === 'containers' || o.change === 'search';
        set[o.change] = value;
        world.attributes.set(id, set);
        if (discloses && !unchanged) {
          expect(modelTransform(actor.model, 'token:read', before.containers), `${label}: changed ${o.change} without reveal`).toBe('reveal');
        }
        if (o.change === 'expires' && (before.expiresAt === null || Date.parse(future) < Date.parse(before.expiresAt))) {
          expect(modelTransform(actor.model, 'token:delete', before.containers), `${label}: shortened a life without token:delete`).not.toBeNull();
        }
        if (o.change === 'mask') world.customMask.add(id);
        if (o.change === 'search') world.indexed.add(id);
      }
      await world.refresh();
      if (result.ok) world.check(label, result.value, [actor], actor);
      return;
    }
    case 'get': {
      const result = await attempt(label, world, [actor], () => vault.tokens.get(actor.caller, pick(o.target)));
      if (result.ok) world.check(label, result.value, [actor], actor);
      return;
    }
    case 'replay': {
      // By an actor, or by the owner (reveal on everything), who may also touch the token between
      // two reads: a replay must then be a 409, never the stale view.
      const reader = o.byOwner ? world.owner : actor;
      const id = pick(o.target);
      const read = () =>
        attempt(label, world, [reader], () => vault.idempotency.run(reader.caller, { key: `read-${id}`, fingerprint: `get ${id}` }, () => vault.tokens.get(reader.caller, id)));
      for (const touch of o.byOwner && o.touch ? [true, false] : [false]) {
        const result = await read();
        if (result.ok) {
          world.check(label, result.value.result, [reader], reader);
          // A replay is what a read now shows, never a stale or wider view.
          if (result.value.replayed) expect(result.value.result, `${label}: replay differs from a read now`).toEqual(await vault.tokens.get(reader.caller, id));
        }
        if (touch && world.state.has(id)) {
          await vault.tokens.update(world.owner.caller, id, { metadata: { touched: 'yes' } });
          await world.refresh();
        }
      }
      return;
    }
    case 'use': {
      const result = await attempt(label, world, [actor], () => vault.tokens.use(actor.caller, [pick(o.target)]));
      if (result.ok) world.check(label, Object.fromEntries(result.value), [actor], actor);
      return;
    }
    case 'session': {
      // Mostly a public creator and a private authorizer asking for some of its own grants (the
      // case that succeeds); any actor, and any grants, otherwise (which must be refused).
      const applications = actors.filter((a) => a.model.bound === undefined);
      const among = (type: string, i: number) => {
        const typed = applications.filter((a) => a.model.type === type);
        return typed.length > 0 ? typed[i % typed.length]! : applications[i % applications.length]!;
      };
      const creator = o.within ? among('public', o.actor) : actor;
      const authorizer = o.within ? among('private', o.authorizer) : actors[o.authorizer % actors.length]!;
      const own = o.permissions.filter((p) => authorizer.model.permissions.includes(p));
      const permissions = o.within && own.length > 0 ? own : o.permissions;
      const created = await attempt(label, world, [creator], () => vault.sessions.create(creator.caller));
      expect(created.ok, `${label}: only public applications create sessions`).toBe(creator.model.type === 'public' && creator.model.bound === undefined);
      if (!created.ok) return;
      world.check(label, created.value, [creator], creator);
      const granted: ModelApp = { id: `session of ${creator.model.id}`, type: 'private', permissions, rules: [] };
      const authorized = await attempt(`session authorized by ${authorizer.model.type}`, world, [authorizer], () =>
        vault.sessions.authorize(authorizer.caller, { nonce: created.value.nonce, permissions }),
      );
      // Authorizing is only for a private application's own key, and only with grants it holds itself.
      const entitled = authorizer.model.type === 'private' && authorizer.model.bound === undefined && modelCovers(authorizer.model, granted);
      expect(authorized.ok, `${label}: authorization ${authorized.ok ? 'beyond' : 'within'} the authorizer's grants`).toBe(entitled);
      if (!authorized.ok) return;
      const caller = await vault.authenticate(created.value.session_key);
      // The session acts from now on; what it may know is what its grants, bounded by the authorizer, reveal.
      actors.push({ caller, model: { ...granted, id: caller.applicationId, bound: authorizer.model } });
      await world.refresh();
      return;
    }
    case 'key': {
      if (actor.model.bound !== undefined) return; // sessions have no keys
      const made = await vault.applicationKeys.create(world.admin, actor.model.id);
      const listed = await vault.applicationKeys.list(world.admin, actor.model.id);
      expect(JSON.stringify(listed), 'listed keys carry no secret').not.toContain(made.key);
      const same = await vault.authenticate(made.key);
      expect([same.applicationId, [...same.permissions].sort()]).toEqual([actor.model.id, [...actor.caller.permissions].sort()]);
      await vault.applicationKeys.delete(world.admin, actor.model.id, made.id);
      await expect(vault.authenticate(made.key), 'a deleted key stops working').rejects.toBeInstanceOf(VaultError);
      return;
    }
    case 'detokenize': {
      const id = pick(o.target);
      const body = { whole: `{{ ${id} }}`, nested: [o.filtered ? `x{{ ${id} | json: '$.number' }}` : `x{{ ${id} }}`] };
      const result = await attempt(label, world, [actor], () => vault.detokenize.detokenize(actor.caller, body));
      if (result.ok) world.check(label, result.value, [actor], actor);
      return;
    }
    case 'tokenize': {
      const items = [
        { type: 'card', data: { number: secretSource.card(), cvc: secretSource.cvc() }, containers: [container(o.container)] },
        { type: 'token', data: secretSource.text() },
      ];
      items.forEach((item) => world.knows(actor.model, secretsOf(item)));
      const result = await attempt(label, world, [actor], () => vault.tokens.tokenize(actor.caller, { items }));
      if (result.ok) for (const view of (result.value as { items: { id: string }[] }).items) world.tokenIds.push(view.id);
      await world.refresh();
      if (result.ok) world.check(label, result.value, [actor], actor);
      return;
    }
    case 'list': {
      const result = await attempt(label, world, [actor], () => vault.tokens.list(actor.caller, { page: 1, size: 100, ...(o.type ? { type: o.type } : {}) }));
      if (!result.ok) return;
      world.check(label, result.value, [actor], actor);
      const expected = [...world.state.values()].filter((t) => (o.type === null || t.type === o.type) && modelTransform(actor.model, 'token:read', t.containers) !== null);
      expect(result.value.data.map((t) => t.id).sort(), `${label}: listed tokens`).toEqual(expected.map((t) => t.id).sort());
      expect((result.value.pagination as { total_items?: number }).total_items, `${label}: total_items`).toBe(expected.length);
      return;
    }
    case 'search': {
      const target = world.state.get(pick(o.target));
      const guess = target ? secretsOf(target)[0] : undefined;
      const query =
        o.term === 'type' ? 'type:card' : o.term === 'container' ? `container:${container(o.container)}` : guess ? `data:"${guess}"` : 'type:token';
      const result = await attempt(label, world, [actor], () => vault.tokens.search(actor.caller, { query, page: 1, size: 100 }));
      if (!result.ok) return;
      world.check(label, result.value, [actor], actor);
      const expected = [...world.state.values()].filter((t) => {
        const transform = modelTransform(actor.model, 'token:search', t.containers);
        if (transform === null) return false;
        if (query === 'type:card') return t.type === 'card';
        if (query === 'type:token') return t.type === 'token';
        if (query.startsWith('container:')) return t.containers.includes(container(o.container));
        // data: matches the search indexes, and only where the searcher could see the value anyway.
        return transform === 'reveal' && world.indexed.has(t.id) && secretsOf(t)[0] === guess;
      });
      expect(result.value.data.map((t) => t.id).sort(), `${label}: searched tokens for ${query}`).toEqual(expected.map((t) => t.id).sort());
      expect((result.value.pagination as { total_items?: number }).total_items, `${label}: total_items`).toBe(expected.length);
      return;
    }
    case 'reactor': {
      const apps = [world.owner, ...actors];
      const bound = o.app === null ? null : apps[o.app % apps.length]!;
      const application = bound ? { application: { id: bound.model.id } } : {};
      const created = await attempt(label, world, [actor], async () => {
        if (o.inline) return { formula: null, reactor: await vault.reactors.create(actor.caller, { name: 'r', code: EXFIL, ...application }) };
        const formula = await vault.formulas.create(actor.caller, { name: 'exfil', code: EXFIL });
        const reactor = await vault.reactors.create(actor.caller, { name: 'r', formula: { id: formula.id }, configuration: {}, ...application });
        return { formula, reactor };
      });
      if (!created.ok) return;
      if (bound) expect(modelCovers(actor.model, bound.model), `${label}: bound a reactor to an application it does not cover`).toBe(true);
      world.check(label, created.value, [actor], null);
      world.reactors.push({ id: created.value.reactor.id, formulaId: created.value.formula?.id ?? null, author: actor, app: bound?.model ?? null });
      return;
    }
    case 'recode': {
      const reactor = world.reactors[o.reactor % world.reactors.length]!;
      const formulaId = reactor.formulaId;
      if (formulaId === null) {
        // Inline code: PATCH the reactor's own code (the confused deputy when it is bound).
        const result = await attempt(label, world, [actor], () => vault.reactors.patch(actor.caller, reactor.id, { code: EXFIL }));
        if (!result.ok) return;
        if (reactor.app) expect(modelCovers(actor.model, reactor.app), `${label}: changed the inline code that runs as an application it does not cover`).toBe(true);
        reactor.author = actor;
        return;
      }
      const result = await attempt(label, world, [actor], () => vault.formulas.update(actor.caller, formulaId, { name: 'recoded', code: EXFIL }));
      if (!result.ok) return;
      for (const r of world.reactors.filter((r) => r.formulaId === formulaId)) {
        if (r.app) expect(modelCovers(actor.model, r.app), `${label}: changed the code that runs as an application it does not cover`).toBe(true);
        r.author = actor;
      }
      return;
    }
    case 'rebind': {
      const reactor = world.reactors[o.reactor % world.reactors.length]!;
      const apps = [world.owner, ...actors];
      const target = apps[o.app % apps.length]!;
      const result = await attempt(label, world, [actor], () =>
        reactor.formulaId === null
          ? vault.reactors.patch(actor.caller, reactor.id, { name: 'rebound', application: { id: target.model.id } })
          : vault.reactors.update(actor.caller, reactor.id, { name: 'rebound', configuration: {}, application: { id: target.model.id } }),
      );
      if (!result.ok) return;
      expect(modelCovers(actor.model, target.model), `${label}: rebound a reactor to an application it does not cover`).toBe(true);
      if (reactor.app) expect(modelCovers(actor.model, reactor.app), `${label}: changed a reactor bound to an application it does not cover`).toBe(true);
      reactor.app = target.model;
      return;
    }
    case 'invoke': {
      const reactor = world.reactors[o.reactor % world.reactors.length]!;
      const id = pick(o.target);
      const args = { target: id, ...(o.detokenize ? { inline: `{{ ${id} }}` } : {}) };
      // What the code returns is its author's choice; what it may reach is what its author may know.
      const readers = reactor.author ? [actor, reactor.author] : [actor];
      const result = await attempt(label, world, readers, () => vault.reactors.react(actor.caller, reactor.id, { args }));
      if (result.ok) world.check(label, result.value, readers, null);
      return;
    }
  }
}

async function setUp(vault: TestVault, specs: AppSpec[], seed: number): Promise<World> {
  const admin = await vault.authenticate(vault.adminKey);
  const toActor = async (spec: AppSpec | { type: 'private'; permissions: Permission[]; rules: AccessRule[] }, name: string): Promise<Actor> => {
    const caller = await vault.caller({ name, type: spec.type, permissions: spec.permissions, rules: spec.rules });
    return { caller, model: { id: caller.applicationId, type: spec.type, permissions: [...caller.permissions], rules: specRules(spec) } };
  };
  const owner = await toActor({ type: 'private', permissions: [...TOKEN_PERMISSIONS], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: [...TOKEN_PERMISSIONS] }] }, 'owner');
  const actors: Actor[] = [];
  for (const [i, spec] of specs.entries()) actors.push(await toActor(spec, `app ${i}`));
  const world = new World(vault, owner, admin, actors, new Secrets(seed));
  const seeds = [
    { type: 'card', data: { number: world.secretSource.card(), expiration_month: 12, expiration_year: 2031, cvc: world.secretSource.cvc() }, containers: ['/pci/high/'] },
    { type: 'card', data: { number: world.secretSource.card(), cvc: world.secretSource.cvc() }, containers: ['/pci/low/'], search_indexes: ['{{ data.number }}'] },
    { type: 'token', data: world.secretSource.text(), containers: ['/general/high/'], search_indexes: ['{{ data }}'] },
    { type: 'token', data: world.secretSource.text(), containers: ['/bank/high/'] },
  ];
  for (const body of seeds) {
    const view = await vault.tokens.create(owner.caller, body);
    world.tokenIds.push(view.id);
    if (body.search_indexes) {
      world.indexed.add(view.id);
      world.attributes.set(view.id, { search: JSON.stringify(body.search_indexes) });
    }
  }
  // An administrator's reactor, bound to the owner, whose code discloses nothing.
  const formula = await vault.formulas.create(admin, { name: 'benign', code: BENIGN });
  const reactor = await vault.reactors.create(admin, { name: 'benign', formula: { id: formula.id }, configuration: {}, application: { id: owner.model.id } });
  world.reactors.push({ id: reactor.id, formulaId: formula.id, author: null, app: owner.model });
  await world.refresh();
  return world;
}

/** The rules as given (an application without rules gets the implicit ones, which the model derives itself). */
function specRules(spec: { rules: AccessRule[] }): AccessRule[] {
  return spec.rules.map((rule) => ({ ...rule, permissions: [...new Set(rule.permissions)] }));
}

describeEachStore('no caller learns more than its read transform reveals (property)', (store) => {
  const runs = FUZZ_RUNS > 0 ? FUZZ_RUNS : store.name === 'sqlite' ? 150 : 40;
  it(`holds over ${runs} random sequences of operations`, { timeout: 600_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(appSpec, { minLength: 2, maxLength: 4 }), fc.array(op, { minLength: 5, maxLength: 25 }), fc.integer(), async (specs, ops, seed) => {
        const made = store.create();
        const vault = await createTestVault({ store: made });
        try {
          const world = await setUp(vault, specs, seed);
          for (const o of ops) await step(world, o);
        } finally {
          await vault.close();
          await store.cleanup(made);
        }
      }),
      { numRuns: runs, ...(FUZZ_RUNS > 0 ? {} : { seed: 20261123 }) },
    );
  });
});
