/**
 * The vault's first principle as a property (issues 10 and 19): no sequence of operations lets a
 * caller learn more about a token's data than its token:read transform on that token reveals
 * (token:use counts too: it hands the data to reactors the caller runs), nor obtain, through
 * another principal or a side effect, data, token ids or power it does not hold itself.
 *
 * fast-check draws applications (public and private with random permissions and rules on random
 * containers; private with split grants: writes revealing on a subtree, reads masked everywhere;
 * management applications that are tenant administrators, or hold only part of the management
 * permissions: reactor:* and log:read, application:read/update, ...), tokens owned by a revealing
 * application, and a sequence of:
 * - creates, updates of every attribute, tokenizes, gets (also under idempotency keys, replayed),
 *   lists, searches, detokenizations (token:use, POST /detokenize, and the same body and a header
 *   through the ephemeral proxy, by the actor given proxy:invoke, to a destination that echoes them);
 * - deduplicating creates, tokenizes and updates whose data is another token's (of any
 *   application and container), by callers that may or may not reveal that token;
 * - invocations of a reactor bound to a privileged application whose code returns
 *   `{ tokenize: req.args.body }`, by an invoker with a guessed or fresh card and deduplicate_token;
 * - reactor creations (from a formula or with inline code), recodings (formula PUT, inline code or
 *   configuration PATCH), rebindings (PUT, PATCH) and invocations, by any application, management
 *   ones with partial permissions included;
 * - reactor invocations under an idempotency key, replayed after the token they read was deleted;
 * - sessions (created by one application, authorized by another, then acting like any caller);
 * - application keys added by the administrator, listed, used and deleted; keys minted, regenerated
 *   and deleted, applications created (copies of another's grants) and deleted, and grants changed
 *   (widened, narrowed, rewritten; of itself too), by management applications of any kind.
 * After every step:
 * - no response or error carries a secret (card number, cvc, string token) the reference model
 *   (reference-model.ts) says its caller cannot know, nor a fingerprint of a token it cannot reveal,
 *   nor the id of a token it may not know (one it may list or search, created, or named itself);
 * - list and search return exactly the tokens, and count exactly the tokens, the model allows;
 * - a deduplicating write answers with an existing token exactly when the model has one of the
 *   same type and fingerprint that its caller (and a tokenize block's invoker) may reveal;
 * - an operation that changes what a token discloses, shortens its life, makes code run as an
 *   application, changes what a reactor or formula runs, mints a key, creates or deletes an
 *   application or changes its grants succeeded exactly when the model entitles the caller to it
 *   (a tenant administrator, or a caller covering every application involved; for code, its author
 *   or an administrator); a minted key acts with its application's grants and reads nothing its
 *   minter may not know;
 * - a session is authorized exactly when a private application gives some of its own grants, and
 *   acts with no more than them and its authorizer's; a key is shown once, never listed, and dead
 *   once deleted; a reactor's stored output is not replayed once the token it read is gone.
 *
 * CI runs a fixed seed and a bounded number of runs; `npm run fuzz` runs many more with new seeds.
 * At CI's count on SQLite, each of these reintroduced findings fails it (docs/security.md):
 * any management application taken for a tenant administrator; a create's deduplication matching
 * any token (no dedupeScopes; with or without the viewer's guard behind it); a tokenize block's
 * deduplication matching what only its application may reveal (no shownTo); code or configuration
 * changed by someone other than its author or an administrator (no requireMayRecode); keys minted or
 * deleted without covering their application (no requireMayActOn in the key service); a reactor's
 * stored output replayed after the token it read was deleted; and those of hostile expressions (a disclosing
 * change without reveal, a fingerprint shown to a masked reader, a response under the write's
 * transform, lists without the read grants, `data:` under mask, an expiry without token:delete, a
 * reactor bound without covering its application).
 *
 * Between these steps, pre-configured proxies (create, get, list, PUT, merge patch, delete, key
 * rotation; by holders of proxy permissions, by the actors above, and by another tenant) are held
 * to the same model: proxy-steps.ts says what is checked.
 *
 * Token intents (docs/token-intents.md) have their own property beside this one, on the same
 * reference model: no-leak-intents.property.test.ts; so do the calls of proxies (ephemeral and
 * keyed, with their transforms): no-leak-proxy-calls.property.test.ts.
 */
import fc from 'fast-check';
import type { CreateTokenInput } from '../../src/tokens/token-input.js';
import { expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { deriveCaller } from '../../src/auth/caller-brand.js';
import { InternalError, VaultError } from '../../src/errors/errors.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import {
  type ModelApp,
  type ModelToken,
  RULE_CONTAINERS,
  TOKEN_CONTAINERS,
  TOKEN_PERMISSIONS,
  dedupeCandidates,
  learn,
  mayKnowId,
  modelCovers,
  modelIsAdmin,
  modelMayActAs,
  modelMayRecode,
  modelTransform,
  luhn,
  printedFingerprint,
  rulesOf,
  secretsOf,
} from './reference-model.js';
import { SUITE_START } from '../support/suite-start.js';
import { ProxySteps, proxyPlan } from './proxy-steps.js';

const FUZZ_RUNS = Number(process.env.TOKENVAULT_FUZZ_RUNS ?? 0);
const PUBLIC: Permission[] = ['token:create', 'token:update'];
const PRIVATE: Permission[] = [...TOKEN_PERMISSIONS, 'reactor:create', 'reactor:read', 'reactor:update'];
const MANAGEMENT: Permission[] = [
  'application:create',
  'application:read',
  'application:update',
  'application:delete',
  'reactor:create',
  'reactor:read',
  'reactor:update',
  'reactor:delete',
  'log:read',
];
/** What each type may hold (of the permissions this test uses). */
const HOLDABLE: Record<ModelApp['type'], readonly Permission[]> = { public: PUBLIC, private: [...PRIVATE, 'reactor:delete'], management: MANAGEMENT };

const EXFIL = `module.exports = async function (req) {
  let got = null;
  if (req.bt) { try { got = await req.bt.tokens.retrieve(req.args.target); } catch (e) { got = String(e && e.message); } }
  return { raw: { args: req.args, got } };
};`;
/** The same code, another text: a recode always changes what runs. */
const EXFIL_AGAIN = `${EXFIL}\n// again`;
const BENIGN = 'module.exports = async function (req) { return { raw: { ok: true } }; };';
/** A reactor's tokenize block: the tokens are made as its application, the answer goes to the invoker. */
const TOKENIZE = 'module.exports = async function (req) { return { tokenize: req.args.body }; };';

interface AppSpec {
  type: 'public' | 'private' | 'management';
  permissions: Permission[];
  rules: AccessRule[];
}

const appSpec: fc.Arbitrary<AppSpec> = fc.oneof(
  fc.record({ type: fc.constant('public' as const), permissions: fc.subarray(PUBLIC, { minLength: 1 }), rules: rulesOf(PUBLIC) }),
  fc.record({ type: fc.constant('private' as const), permissions: fc.subarray(PRIVATE, { minLength: 1 }), rules: rulesOf([...TOKEN_PERMISSIONS]) }),
  // Split grants, which random rules seldom make: writes reveal on a subtree while reads mask everywhere
  // (a response under the write's transform, or a duplicate it may not reveal, would show it more).
  fc.record({
    type: fc.constant('private' as const),
    permissions: fc.constant(PRIVATE),
    rules: fc.constantFrom(...RULE_CONTAINERS).map((container): AccessRule[] => [
      { priority: 0, container, transform: 'reveal', permissions: ['token:create', 'token:update'] },
      { priority: 1, container: '/', transform: 'mask', permissions: [...TOKEN_PERMISSIONS] },
    ]),
  }),
  fc.record({
    type: fc.constant('management' as const),
    // Partial management permissions (not an administrator) as often as anything, administrators included.
    permissions: fc.oneof(
      fc.constant<Permission[]>(['reactor:create', 'reactor:read', 'reactor:update', 'reactor:delete', 'log:read']),
      fc.constant<Permission[]>(['application:read', 'application:update']),
      fc.constant<Permission[]>(['application:read', 'application:update', 'application:delete', 'reactor:create', 'reactor:update']),
      fc.subarray(MANAGEMENT, { minLength: 1 }),
    ),
    rules: fc.constant<AccessRule[]>([]),
  }),
);

const CHANGES = ['mask', 'fingerprint', 'containers', 'search', 'expires', 'data', 'metadata'] as const;
const GRANT_CHANGES = ['same', 'widen', 'narrow', 'admin'] as const;
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
  // Unbound about a third of the time: code any reactor:update holder could otherwise recode.
  fc.record({ kind: fc.constant('reactor' as const), actor: n, app: fc.option(n, { freq: 2 }), inline: fc.boolean() }),
  // Weighted: most recodes are of another's reactor or formula (the setup's unbound one included), refused unless by an administrator.
  { arbitrary: fc.record({ kind: fc.constant('recode' as const), actor: n, reactor: n, own: fc.boolean(), configuration: fc.boolean() }), weight: 2 },
  fc.record({ kind: fc.constant('rebind' as const), actor: n, reactor: n, own: fc.boolean(), app: n }),
  fc.record({ kind: fc.constant('invoke' as const), actor: n, reactor: n, target: n, detokenize: fc.boolean() }),
  // A session made by one application and authorized by another with some token permissions: it then acts as an actor.
  fc.record({ kind: fc.constant('session' as const), actor: n, authorizer: n, permissions: fc.subarray([...TOKEN_PERMISSIONS], { minLength: 1 }), within: fc.boolean() }),
  // The administrator adds a key to an application, lists its keys, uses the key, deletes it.
  fc.record({ kind: fc.constant('key' as const), actor: n }),
  // A deduplicating create, tokenize or update whose data is another token's (any owner, any container).
  {
    arbitrary: fc.record({
      kind: fc.constant('dedupe' as const),
      actor: n,
      via: fc.constantFrom('create', 'tokenize', 'update'),
      guess: n,
      target: n,
      same: fc.boolean(),
      container: n,
    }),
    weight: 3,
  },
  // The tokenize block of a reactor bound to the owner, with a guessed (or fresh) card and deduplicate_token.
  { arbitrary: fc.record({ kind: fc.constant('block' as const), actor: n, guess: fc.option(n, { freq: 4 }), same: fc.boolean(), container: n }), weight: 3 },
  // A management application (mostly) adds a key to, regenerates the key of, or deletes a key of an application.
  { arbitrary: fc.record({ kind: fc.constant('mint' as const), actor: n, target: n, how: fc.constantFrom('add', 'regenerate', 'delete') }), weight: 2 },
  // A management application (mostly) changes an application's grants, its own included.
  { arbitrary: fc.record({ kind: fc.constant('grant' as const), actor: n, target: n, change: fc.constantFrom(...GRANT_CHANGES) }), weight: 2 },
  // A management application (mostly) creates an application with another's grants, uses its key, deletes it.
  fc.record({ kind: fc.constant('copy' as const), actor: n, like: n, target: n }),
  // A reactor run under an idempotency key over a fresh token, replayed (after the token was deleted, or not).
  fc.record({ kind: fc.constant('rereact' as const), actor: n, reactor: n, container: n, remove: fc.boolean() }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

interface Actor {
  model: ModelApp;
  caller: Caller;
  /** Its key (an application key, or a session key): re-authenticated after any change of grants. */
  key: string;
}
interface Reactor {
  id: string;
  /** null: the reactor has inline code (recoded by PUT or PATCH of the reactor itself). */
  formulaId: string | null;
  /** The inline code it runs now (formulaId null). */
  code: string | null;
  /** The application that created it: it (or an administrator) may change its code or configuration. */
  createdBy: string;
  /** Who wrote the code that runs now; null: the setup's code, which returns nothing of what it reads. */
  author: Actor | null;
  app: ModelApp | null;
}
interface Formula {
  id: string;
  createdBy: string;
  code: string;
}

/** Unique secrets per run, so no value can be confused with another token's. */
class Secrets {
  #used = new Set<string>();
  #rng: () => number;
  constructor(seed: number) {
    let state = seed >>> 0 || 1;
    this.#rng = () => (state = (state * 1103515245 + 12345) >>> 0) / 2 ** 32;
  }
  #fresh(make: () => string): string {
    for (;;) {
      const value = make();
      if (!this.#used.has(value)) return (this.#used.add(value), value);
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

const has = (actor: Actor, permission: Permission) => actor.model.permissions.includes(permission);
const sorted = (values: Iterable<string>) => [...values].sort();

class World {
  readonly known = new Map<string, Set<string>>();
  /** The token ids each application may know: ones it may list or search (at any time), and ones its creates made. */
  readonly knownIds = new Map<string, Set<string>>();
  /** Every secret that ever existed in the run: a value patched away is still a secret. */
  readonly secrets = new Set<string>();
  /** Every token id that ever existed in the run. */
  readonly everIds = new Set<string>();
  readonly tokenIds: string[] = [];
  readonly customMask = new Set<string>();
  readonly customFingerprint = new Set<string>();
  readonly indexed = new Set<string>();
  /** The disclosure attributes this run set on each token (JSON text), to tell a change from a rewrite of the same value. */
  readonly attributes = new Map<string, Record<string, string>>();
  readonly reactors: Reactor[] = [];
  readonly formulas = new Map<string, Formula>();
  state = new Map<string, ModelToken>();
  /** The live tokens when the current step began. */
  before = new Map<string, ModelToken>();
  /** The token ids the current step's requests name: their caller sent them, so it knows them. */
  readonly stepIds = new Set<string>();
  /** Counts configuration changes, so each one changes something. */
  revision = 0;

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

  knowsIds(app: ModelApp, ids: Iterable<string>): void {
    let set = this.knownIds.get(app.id);
    if (!set) this.knownIds.set(app.id, (set = new Set()));
    for (const id of ids) set.add(id);
  }

  /** The applications with keys of their own (sessions have none): the owner and the actors that are not sessions. */
  applications(): Actor[] {
    return [this.owner, ...this.actors.filter((a) => a.model.bound === undefined)];
  }

  /** A management actor when there is one: most callers of the application APIs should hold some of their permissions. */
  manager(i: number): Actor {
    const managers = this.actors.filter((a) => a.model.type === 'management');
    return managers.length > 0 ? managers[i % managers.length]! : this.actors[i % this.actors.length]!;
  }

  /** An actor holding `permission` when there is one (others are refused before the interesting part). */
  holding(permission: Permission, i: number, also: (actor: Actor) => boolean = () => true): Actor {
    const holders = this.actors.filter((a) => has(a, permission) && also(a));
    return holders.length > 0 ? holders[i % holders.length]! : this.actors[i % this.actors.length]!;
  }

  beginStep(): void {
    this.before = new Map(this.state);
    this.stepIds.clear();
  }

  /** The tokens the current step made. */
  newIds(): string[] {
    return [...this.state.keys()].filter((id) => !this.before.has(id));
  }

  /** After any change of grants: every actor acts from now on as its key resolves (sessions bounded by their authorizer as it is now). */
  async reauthenticate(): Promise<void> {
    for (const actor of [this.owner, ...this.actors]) {
      actor.caller = await this.vault.authenticate(actor.key);
      if (actor.model.bound === undefined)
        expect(sorted(actor.caller.permissions), `${actor.model.id}'s permissions as the model has them`).toEqual(sorted(actor.model.permissions));
    }
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
          customFingerprint: this.customFingerprint.has(view.id),
        };
        next.set(view.id, token);
        this.everIds.add(view.id);
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
      this.knowsIds(
        actor.model,
        [...next.values()].filter((token) => mayKnowId(actor.model, token)).map((token) => token.id),
      );
    }
  }

  /**
   * Fails when `response` shows a secret none of `readers` may know, the id of a token none of them
   * may know (nor the step named or made), or a fingerprint `fingerprintReader` may not see.
   */
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
    const ids = new Set([...this.stepIds, ...this.newIds(), ...readers.flatMap((reader) => [...(this.knownIds.get(reader.model.id) ?? [])])]);
    for (const id of this.everIds) {
      if (!ids.has(id)) expect(text.includes(id), `${label} names token ${id}, which its caller may not know`).toBe(false);
    }
    if (fingerprintReader === null) return;
    for (const object of fingerprinted(response)) {
      const token = this.state.get(String(object.id)) ?? this.before.get(String(object.id));
      const reveal = token !== undefined && (modelIsAdmin(fingerprintReader.model) || modelTransform(fingerprintReader.model, 'token:read', token.containers) === 'reveal');
      expect(reveal, `${label} shows the fingerprint of ${String(object.id)} to a caller that cannot reveal it`).toBe(true);
    }
  }

  /**
   * A deduplicating write's answer (`view`): when it names an existing token, that token is one
   * the model allows (same type and fingerprint, revealable by every viewer). With `exact`, it
   * names one exactly when the model has one.
   */
  checkDedupe(label: string, view: unknown, type: string, printed: string, viewers: ModelApp[], exact: boolean, except?: string): void {
    const { id, _extras } = view as { id?: string; _extras?: { deduplicated?: boolean } };
    const deduplicated = _extras?.deduplicated === true;
    const candidates = dedupeCandidates(this.before.values(), type, printed, viewers, except).map((t) => t.id);
    if (deduplicated) {
      const existing = this.before.get(String(id));
      const why = existing === undefined ? 'no such token' : viewers.map((v) => `${v.type} ${modelTransform(v, 'token:read', existing.containers)}`).join(', ');
      expect(candidates, `${label} answered with token ${String(id)} (${why}), which its caller may not reveal`).toContain(id);
    } else if (id !== except) expect(this.before.has(String(id)), `${label} answered with an existing token without saying it was a duplicate`).toBe(false);
    if (exact) expect(deduplicated, `${label}: ${deduplicated ? 'a duplicate' : 'a new token'}, the model has ${candidates.length} duplicates`).toBe(candidates.length > 0);
  }
}

async function attempt<T>(label: string, world: World, readers: Actor[], fn: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    // Refusals are expected; anything else (an InternalError included) is a 500 an attacker could provoke.
    if (!(error instanceof VaultError) || error instanceof InternalError) throw error;
    world.check(`${label} (error)`, { message: error.message, errors: (error as { errors?: unknown }).errors }, readers, null);
    return { ok: false };
  }
}

/** Reads with a key someone else obtained (minted, regenerated, or of an application it created): nothing its obtainer may not know. */
async function readWith(world: World, label: string, caller: Caller, obtainer: Actor, id: string): Promise<void> {
  const listed = await attempt(`${label}, then list`, world, [obtainer], () => world.vault.tokens.list(caller, { size: 100 }));
  if (listed.ok) world.check(`${label}, then list`, listed.value, [obtainer], obtainer);
  const used = await attempt(`${label}, then use`, world, [obtainer], () => world.vault.tokens.use(caller, [id]));
  if (used.ok) world.check(`${label}, then use`, Object.fromEntries(used.value), [obtainer], obtainer);
}

/** An application's grants after a change (`same`: rewritten as they are). */
function regrant(app: ModelApp, change: (typeof GRANT_CHANGES)[number], which: number): { permissions: Permission[]; rules: AccessRule[] } {
  const permissions = [...app.permissions];
  const rules = app.rules.map((rule) => ({ ...rule, permissions: [...rule.permissions] }));
  switch (change) {
    case 'same':
      return { permissions, rules };
    case 'narrow':
      return { permissions: permissions.filter((_, i) => i !== which % Math.max(permissions.length, 1)), rules };
    case 'admin':
      return { permissions: [...new Set<Permission>([...permissions, 'application:create', 'application:update'])], rules };
    case 'widen': {
      if (app.type === 'management') return { permissions: [...MANAGEMENT], rules: [] };
      const all = app.type === 'public' ? PUBLIC : PRIVATE;
      return { permissions: [...all], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: all.filter((p) => p.startsWith('token:')) }] };
    }
  }
}

/** Who takes a step. Deduplication, tokenize blocks and stored reactor runs are mostly tried by callers holding what they need to get that far. */
function actorOf(world: World, o: Op): Actor {
  if (o.kind === 'dedupe') return world.holding(o.via === 'update' ? 'token:update' : 'token:create', o.actor);
  if (o.kind === 'block') return world.holding('token:use', o.actor);
  if (o.kind === 'rereact') return world.holding('token:use', o.actor, (a) => a.model.type !== 'public');
  return world.actors[o.actor % world.actors.length]!;
}

async function step(world: World, o: Op): Promise<void> {
  const actor = actorOf(world, o);
  world.beginStep();
  await act(world, o, actor);
  // The tokens its creates made (or that were made for it) are ids it knows from now on.
  world.knowsIds(actor.model, world.newIds());
}

async function act(world: World, o: Op, actor: Actor): Promise<void> {
  const { vault, actors, secretSource } = world;
  /** A token id the request sends (its caller knows it). */
  const pick = (i: number) => {
    const id = world.tokenIds[i % world.tokenIds.length]!;
    world.stepIds.add(id);
    return id;
  };
  /** A token whose data the caller guesses (its id is not sent). */
  const peek = (i: number) => world.state.get(world.tokenIds[i % world.tokenIds.length]!);
  const container = (i: number) => TOKEN_CONTAINERS[i % TOKEN_CONTAINERS.length]!;
  const label = `${o.kind} by ${actor.model.type} ${JSON.stringify(actor.model.permissions)} ${JSON.stringify(actor.model.rules)}`;

  switch (o.kind) {
    case 'create': {
      const guessed = o.guess === null ? undefined : peek(o.guess);
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
        if (o.mask && !result.value._extras?.deduplicated) {
          world.customMask.add(result.value.id);
          // Writing the same mask again later is no change.
          world.attributes.set(result.value.id, { mask: JSON.stringify(body.mask) });
        }
      }
      await world.refresh();
      if (!result.ok) return;
      world.check(label, result.value, [actor], actor);
      if (o.dedupe) world.checkDedupe(label, result.value, body.type as string, printedFingerprint(body.type as string, body.data, false), [actor.model], true);
      else expect(result.value._extras?.deduplicated, `${label}: a duplicate without deduplicate_token`).toBeUndefined();
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
      // A token created with deduplicate_token deduplicates on update too: then nothing was written.
      const duplicate = result.ok && result.value._extras?.deduplicated === true;
      if (result.ok && !duplicate) {
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
        if (o.change === 'fingerprint') world.customFingerprint.add(id);
      }
      await world.refresh();
      if (!result.ok) return;
      world.check(label, result.value, [actor], actor);
      if (duplicate) {
        const data = o.change === 'data' ? (isCard ? { ...(before.data as object), ...(patch.data as object) } : patch.data) : before.data;
        const custom = o.change === 'fingerprint' || before.customFingerprint;
        world.checkDedupe(label, result.value, before.type, printedFingerprint(before.type, data, custom), [actor.model], false, id);
      }
      return;
    }
    case 'dedupe': {
      // Data the caller guesses: another token's (any owner, any container), in its container or another.
      const tokens = [...world.state.values()];
      const target = o.via === 'update' ? world.state.get(pick(o.target)) : undefined;
      const among = target ? tokens.filter((t) => t.type === target.type && t.id !== target.id) : tokens;
      const guessed = among[o.guess % Math.max(among.length, 1)];
      if (!guessed || (o.via === 'update' && !target)) return;
      const data = guessed.type === 'card' ? { number: (guessed.data as { number: string }).number, cvc: secretSource.cvc() } : guessed.data;
      world.knows(actor.model, secretsOf({ type: guessed.type, data }));
      const containers = o.same ? guessed.containers : [container(o.container)];
      const body = { type: guessed.type, data, containers, deduplicate_token: true };
      const dlabel = `${label} via ${o.via} (${guessed.type} in ${guessed.containers.join()} as ${containers.join()})`;
      if (o.via === 'create') {
        const result = await attempt(dlabel, world, [actor], () => vault.tokens.create(actor.caller, body as unknown as CreateTokenInput));
        if (result.ok && !world.tokenIds.includes(result.value.id)) world.tokenIds.push(result.value.id);
        await world.refresh();
        if (!result.ok) return;
        world.check(dlabel, result.value, [actor], actor);
        world.checkDedupe(dlabel, result.value, guessed.type, printedFingerprint(guessed.type, data, false), [actor.model], true);
        return;
      }
      if (o.via === 'tokenize') {
        // With a fresh card of the caller's own after it: only the first may be a duplicate.
        const fresh = { type: 'card', data: { number: secretSource.card(), cvc: secretSource.cvc() }, containers, deduplicate_token: true };
        world.knows(actor.model, secretsOf(fresh));
        const result = await attempt(dlabel, world, [actor], () => vault.tokens.tokenize(actor.caller, { items: [body, fresh] }));
        const items = result.ok ? (result.value as { items: { id: string }[] }).items : [];
        for (const view of items) if (!world.tokenIds.includes(view.id)) world.tokenIds.push(view.id);
        await world.refresh();
        if (!result.ok) return;
        world.check(dlabel, result.value, [actor], actor);
        world.checkDedupe(dlabel, items[0], guessed.type, printedFingerprint(guessed.type, data, false), [actor.model], true);
        world.checkDedupe(`${dlabel} (fresh)`, items[1], 'card', printedFingerprint('card', fresh.data, false), [actor.model], true);
        return;
      }
      // An update of a token the caller may update, to another's data (the whole of it), turning deduplication on.
      const result = await attempt(dlabel, world, [actor], () => vault.tokens.update(actor.caller, target!.id, { data, deduplicate_token: true }));
      await world.refresh();
      if (!result.ok) return;
      world.check(dlabel, result.value, [actor], actor);
      const next = target!.type === 'card' ? { ...(target!.data as object), ...(data as object) } : data;
      world.checkDedupe(dlabel, result.value, target!.type, printedFingerprint(target!.type, next, target!.customFingerprint), [actor.model], false, target!.id);
      return;
    }
    case 'block': {
      // The invoker asks the reactor (bound to a privileged application) to tokenize a card whose number it guessed.
      const reactor = world.reactors.find((r) => r.formulaId === null && r.code === TOKENIZE);
      if (!reactor) return;
      const cards = [...world.state.values()].filter((t) => t.type === 'card');
      const guessed = o.guess === null ? undefined : cards[o.guess % Math.max(cards.length, 1)];
      const number = guessed ? (guessed.data as { number: string }).number : secretSource.card();
      const containers = o.same && guessed ? guessed.containers : [container(o.container)];
      const body = { type: 'card', data: { number, cvc: secretSource.cvc() }, containers, deduplicate_token: true };
      world.knows(actor.model, secretsOf(body));
      const readers = reactor.author ? [actor, reactor.author] : [actor];
      const blabel = `${label} (tokenize block as ${reactor.app?.type ?? 'nobody'} ${JSON.stringify(reactor.app?.permissions ?? [])}, ${guessed ? `guessed ${guessed.containers.join()}` : 'fresh'} as ${containers.join()})`;
      const result = await attempt(blabel, world, readers, () => vault.reactors.react(actor.caller, reactor.id, { args: { body } }));
      const view = result.ok ? (result.value.tokens as { id: string } | undefined) : undefined;
      if (view && !world.tokenIds.includes(view.id)) world.tokenIds.push(view.id);
      await world.refresh();
      if (!result.ok) return;
      world.check(blabel, result.value, readers, null);
      expect(view, `${blabel}: no token`).toBeDefined();
      // A duplicate both the application and the invoker may reveal, exactly when there is one.
      world.checkDedupe(blabel, view, 'card', printedFingerprint('card', body.data, false), [reactor.app!, actor.model], true);
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
    case 'rereact': {
      // A reactor run over a fresh token of the owner's under an idempotency key (the token named
      // by args is followed, as the HTTP layer does), then the same request again: a replay of
      // the stored output, or, once the token was deleted, a 409 rather than data the vault no longer holds.
      const reactor = world.reactors[o.reactor % world.reactors.length]!;
      const fresh = await vault.tokens.create(world.owner.caller, {
        type: 'card',
        data: { number: secretSource.card(), cvc: secretSource.cvc() },
        containers: [container(o.container)],
      });
      world.tokenIds.push(fresh.id);
      world.stepIds.add(fresh.id);
      await world.refresh();
      const readers = reactor.author ? [actor, reactor.author] : [actor];
      const args = { target: fresh.id, inline: `{{ ${fresh.id} }}` };
      const react = () =>
        attempt(label, world, readers, () =>
          vault.idempotency.run(actor.caller, { key: `react-${fresh.id}`, fingerprint: `react ${reactor.id} ${fresh.id}`, tokenIds: () => [fresh.id] }, () =>
            vault.reactors.react(actor.caller, reactor.id, { args }),
          ),
        );
      const first = await react();
      if (first.ok) world.check(label, first.value.result, readers, null);
      if (o.remove) {
        await vault.tokens.delete(world.owner.caller, fresh.id);
        await world.refresh();
      }
      const again = await react();
      if (again.ok) world.check(`${label} (again)`, again.value.result, readers, null);
      if (!first.ok) return;
      expect(again.ok, `${label}: ${again.ok ? 'replayed the output of a run over a token deleted since' : 'refused to replay'}`).toBe(!o.remove);
      if (!again.ok) return;
      expect(again.value.replayed, `${label}: ran again instead of replaying`).toBe(true);
      expect(again.value.result, `${label}: replay differs from the run`).toEqual(JSON.parse(JSON.stringify(first.value.result)));
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
      actors.push({ caller, key: created.value.session_key, model: { ...granted, id: caller.applicationId, bound: authorizer.model } });
      await world.refresh();
      return;
    }
    case 'key': {
      if (actor.model.bound !== undefined) return; // sessions have no keys
      const made = await vault.applicationKeys.create(world.admin, actor.model.id);
      const listed = await vault.applicationKeys.list(world.admin, actor.model.id);
      expect(JSON.stringify(listed), 'listed keys carry no secret').not.toContain(made.key);
      const same = await vault.authenticate(made.key!);
      expect([same.applicationId, sorted(same.permissions)]).toEqual([actor.model.id, sorted(actor.caller.permissions)]);
      await vault.applicationKeys.delete(world.admin, actor.model.id, made.id);
      await expect(vault.authenticate(made.key), 'a deleted key stops working').rejects.toBeInstanceOf(VaultError);
      return;
    }
    case 'mint': {
      // Holding a key of an application is acting as it: an administrator, or a caller covering it.
      const minter = world.manager(o.actor);
      const targets = [minter, ...world.applications()];
      const target = targets[o.target % targets.length]!;
      if (minter.model.bound !== undefined) return;
      const mayAct = has(minter, 'application:update') && modelMayActAs(minter.model, target.model);
      const mlabel = `${o.how} key of ${target === minter ? 'itself' : target.model.type} ${JSON.stringify(target.model.permissions)} by ${minter.model.type} ${JSON.stringify(minter.model.permissions)}`;
      if (o.how === 'delete') {
        const made = await vault.applicationKeys.create(world.admin, target.model.id);
        const deleted = await attempt(mlabel, world, [minter], () => vault.applicationKeys.delete(minter.caller, target.model.id, made.id));
        expect(deleted.ok, `${mlabel}: ${deleted.ok ? 'deleted a key of an application it may not act as' : 'refused'}`).toBe(mayAct);
        if (!deleted.ok) await vault.applicationKeys.delete(world.admin, target.model.id, made.id);
        await expect(vault.authenticate(made.key), 'a deleted key stops working').rejects.toBeInstanceOf(VaultError);
        return;
      }
      const made = await attempt(mlabel, world, [minter], async () =>
        o.how === 'add' ? await vault.applicationKeys.create(minter.caller, target.model.id) : await vault.applications.regenerateKey(minter.caller, target.model.id),
      );
      expect(made.ok, `${mlabel}: ${made.ok ? 'obtained a key of an application it may not act as' : 'refused'}`).toBe(mayAct);
      if (!made.ok) return;
      world.check(mlabel, made.value, [minter], minter);
      const key = made.value.key!;
      // Regenerating replaces every key of the application.
      if (o.how === 'regenerate') target.key = key;
      const minted = await vault.authenticate(key);
      expect([minted.applicationId, sorted(minted.permissions)], `${mlabel}: the key acts as its application`).toEqual([target.model.id, sorted(target.model.permissions)]);
      await readWith(world, mlabel, minted, minter, pick(o.target));
      if (o.how === 'add') {
        await vault.applicationKeys.delete(minter.caller, target.model.id, made.value.id);
        await expect(vault.authenticate(key), 'a deleted key stops working').rejects.toBeInstanceOf(VaultError);
      }
      return;
    }
    case 'grant': {
      // Changing grants (widening, narrowing, or writing them as they are; of itself too): an
      // administrator, or a caller covering the application before and after.
      const updater = world.manager(o.actor);
      const targets = [updater, ...world.applications()];
      const target = targets[o.target % targets.length]!;
      if (updater.model.bound !== undefined) return;
      // The owner's grants are the model's view of the vault: only rewritten as they are.
      const change = target === world.owner ? 'same' : o.change;
      const { permissions, rules } = regrant(target.model, change, o.target);
      const next: ModelApp = { ...target.model, permissions, rules };
      const valid = permissions.every((p) => HOLDABLE[target.model.type].includes(p));
      const mayAct = modelIsAdmin(updater.model) || (modelCovers(updater.model, target.model) && modelCovers(updater.model, next));
      const glabel = `${change} grants of ${target === updater ? 'itself' : target.model.type} ${JSON.stringify(target.model.permissions)} by ${updater.model.type} ${JSON.stringify(updater.model.permissions)}`;
      const result = await attempt(glabel, world, [updater], () => vault.applications.update(updater.caller, target.model.id, { name: 'regranted', permissions, rules }));
      expect(result.ok, `${glabel}: ${result.ok ? 'changed grants it may not give' : 'refused'}`).toBe(valid && has(updater, 'application:update') && mayAct);
      if (!result.ok) return;
      world.check(glabel, result.value, [updater], null);
      target.model.permissions = permissions;
      target.model.rules = rules;
      await world.reauthenticate();
      await world.refresh();
      return;
    }
    case 'copy': {
      // Creating an application is choosing its grants and holding its key: an administrator, or a caller covering them.
      const creator = world.manager(o.actor);
      const apps = world.applications();
      const like = apps[o.like % apps.length]!;
      if (creator.model.bound !== undefined) return;
      const mayAct = modelMayActAs(creator.model, like.model);
      const clabel = `create a copy of ${like.model.type} ${JSON.stringify(like.model.permissions)} by ${creator.model.type} ${JSON.stringify(creator.model.permissions)}`;
      const made = await attempt(clabel, world, [creator], () =>
        vault.applications.create(creator.caller, { name: 'copy', type: like.model.type, permissions: [...like.model.permissions], rules: [...like.model.rules] }),
      );
      expect(made.ok, `${clabel}: ${made.ok ? 'created an application with grants it may not give' : 'refused'}`).toBe(has(creator, 'application:create') && mayAct);
      if (!made.ok) return;
      world.check(clabel, made.value, [creator], creator);
      const copy = await vault.authenticate(made.value.key);
      await readWith(world, clabel, copy, creator, pick(o.target));
      const deleted = await attempt(`${clabel}, then delete it`, world, [creator], () => vault.applications.delete(creator.caller, made.value.id));
      expect(deleted.ok, `${clabel}, then delete it: ${deleted.ok ? 'deleted' : 'refused'}`).toBe(has(creator, 'application:delete') && mayAct);
      if (!deleted.ok) await vault.applications.delete(world.admin, made.value.id);
      return;
    }
    case 'detokenize': {
      const id = pick(o.target);
      const body = { whole: `{{ ${id} }}`, nested: [o.filtered ? `x{{ ${id} | json: '$.number' }}` : `x{{ ${id} }}`] };
      const result = await attempt(label, world, [actor], () => vault.detokenize.detokenize(actor.caller, body));
      if (result.ok) world.check(label, result.value, [actor], actor);
      // The same body and a header through the ephemeral proxy (docs/proxies.md), to a destination
      // that echoes what it got: the actor with proxy:invoke learns exactly what /detokenize shows it.
      // The actor's own Caller with proxy:invoke added, minted as the vault mints (a copy would be refused).
      const proxier = deriveCaller(actor.caller, { permissions: [...actor.caller.permissions, 'proxy:invoke'] });
      const proxied = await attempt(`${label} (proxy)`, world, [actor], () =>
        vault.proxy(proxier, {
          method: 'POST',
          url: 'https://echo.example.com',
          headers: { 'content-type': 'application/json', 'x-echo': `{{ ${id} }}` },
          body: JSON.stringify(body),
        }),
      );
      expect(proxied.ok, `${label} (proxy): ${proxied.ok ? 'sent' : 'refused'} where /detokenize was ${result.ok ? 'allowed' : 'refused'}`).toBe(result.ok);
      if (proxied.ok) world.check(`${label} (proxy)`, JSON.parse(new TextDecoder().decode(proxied.value.body)) as unknown, [actor], actor);
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
      const target = peek(o.target);
      const guess = target ? secretsOf(target)[0] : undefined;
      const query = o.term === 'type' ? 'type:card' : o.term === 'container' ? `container:${container(o.container)}` : guess ? `data:"${guess}"` : 'type:token';
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
      const apps = [actor, world.owner, ...actors];
      const bound = o.app === null ? null : apps[o.app % apps.length]!;
      const application = bound ? { application: { id: bound.model.id } } : {};
      const created = await attempt(label, world, [actor], async () => {
        if (o.inline) return { formula: null, reactor: await vault.reactors.create(actor.caller, { name: 'r', code: EXFIL, ...application }) };
        const formula = await vault.formulas.create(actor.caller, { name: 'exfil', code: EXFIL });
        world.formulas.set(formula.id, { id: formula.id, createdBy: actor.model.id, code: EXFIL });
        const reactor = await vault.reactors.create(actor.caller, { name: 'r', formula: { id: formula.id }, configuration: {}, ...application });
        return { formula, reactor };
      });
      // Binding to an application (public or private) needs an administrator or a caller covering it.
      const entitled = has(actor, 'reactor:create') && (bound === null || (bound.model.type !== 'management' && modelMayActAs(actor.model, bound.model)));
      expect(created.ok, `${label}: ${created.ok ? 'bound a reactor to an application it may not act as' : 'refused'}`).toBe(entitled);
      if (!created.ok) return;
      world.check(label, created.value, [actor], null);
      world.reactors.push({
        id: created.value.reactor.id,
        formulaId: created.value.formula?.id ?? null,
        code: o.inline ? EXFIL : null,
        createdBy: actor.model.id,
        author: actor,
        app: bound?.model ?? null,
      });
      return;
    }
    case 'recode': {
      // Half the time one it created, if any (which it may recode while it covers the application), otherwise another's.
      const own = world.reactors.filter((r) => r.createdBy === actor.model.id);
      const others = world.reactors.filter((r) => r.createdBy !== actor.model.id);
      const reactors = o.own && own.length > 0 ? own : others.length > 0 ? others : world.reactors;
      const reactor = reactors[o.reactor % reactors.length]!;
      const formulaId = reactor.formulaId;
      const rlabel = `${label} (reactor by ${reactor.createdBy === actor.model.id ? 'itself' : 'another'}, bound to ${reactor.app?.type ?? 'nothing'})`;
      if (formulaId === null) {
        // Inline code: PATCH the reactor's own code, or its configuration (the confused deputy when it is bound).
        const code = reactor.code === EXFIL ? EXFIL_AGAIN : EXFIL;
        const patch = o.configuration ? { configuration: { url: `https://example.test/${++world.revision}` } } : { code };
        const result = await attempt(rlabel, world, [actor], () => vault.reactors.patch(actor.caller, reactor.id, patch));
        const entitled = has(actor, 'reactor:update') && (reactor.app === null || modelMayActAs(actor.model, reactor.app)) && modelMayRecode(actor.model, reactor.createdBy);
        expect(result.ok, `${rlabel}: ${result.ok ? 'changed what runs without being its author or an administrator covering its application' : 'refused'}`).toBe(entitled);
        if (!result.ok) return;
        if (!o.configuration) reactor.code = code;
        reactor.author = actor;
        return;
      }
      const formula = world.formulas.get(formulaId)!;
      const code = formula.code === EXFIL ? EXFIL_AGAIN : EXFIL;
      const result = await attempt(rlabel, world, [actor], () => vault.formulas.update(actor.caller, formulaId, { name: 'recoded', code }));
      const users = world.reactors.filter((r) => r.formulaId === formulaId);
      const entitled = has(actor, 'reactor:update') && modelMayRecode(actor.model, formula.createdBy) && users.every((r) => r.app === null || modelMayActAs(actor.model, r.app));
      expect(result.ok, `${rlabel}: ${result.ok ? 'changed the code of a formula without being its author or an administrator covering its reactors' : 'refused'}`).toBe(entitled);
      if (!result.ok) return;
      formula.code = code;
      for (const r of users) r.author = actor;
      return;
    }
    case 'rebind': {
      const own = world.reactors.filter((r) => r.createdBy === actor.model.id);
      const reactors = o.own && own.length > 0 ? own : world.reactors;
      const reactor = reactors[o.reactor % reactors.length]!;
      const apps = [actor, world.owner, ...actors];
      const target = apps[o.app % apps.length]!;
      const result = await attempt(label, world, [actor], () =>
        reactor.formulaId === null
          ? vault.reactors.patch(actor.caller, reactor.id, { name: 'rebound', application: { id: target.model.id } })
          : vault.reactors.update(actor.caller, reactor.id, { name: 'rebound', configuration: {}, application: { id: target.model.id } }),
      );
      const entitled =
        has(actor, 'reactor:update') &&
        (reactor.app === null || modelMayActAs(actor.model, reactor.app)) &&
        target.model.type !== 'management' &&
        (reactor.app?.id === target.model.id || modelMayActAs(actor.model, target.model));
      const blabel = `${label} (from ${reactor.app?.type ?? 'nothing'} to ${target.model.type} ${JSON.stringify(target.model.permissions)})`;
      expect(result.ok, `${blabel}: ${result.ok ? 'rebound a reactor without covering both applications' : 'refused'}`).toBe(entitled);
      if (!result.ok) return;
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
  const toActor = async (spec: AppSpec, name: string): Promise<Actor> => {
    const caller = await vault.caller({ name, type: spec.type, permissions: spec.permissions, rules: spec.rules });
    return { caller, key: caller.key, model: { id: caller.applicationId, type: spec.type, permissions: [...caller.permissions], rules: specRules(spec) } };
  };
  const owner = await toActor(
    { type: 'private', permissions: [...TOKEN_PERMISSIONS], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: [...TOKEN_PERMISSIONS] }] },
    'owner',
  );
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
  // The administrator's reactors: one bound to the owner and one unbound, whose code discloses
  // nothing (its invokers trust it: only its author or an administrator may change it), and one
  // bound to the owner that tokenizes what its invoker sends.
  for (const application of [{ application: { id: owner.model.id } }, {}]) {
    const formula = await vault.formulas.create(admin, { name: 'benign', code: BENIGN });
    world.formulas.set(formula.id, { id: formula.id, createdBy: admin.applicationId, code: BENIGN });
    const reactor = await vault.reactors.create(admin, { name: 'benign', formula: { id: formula.id }, configuration: {}, ...application });
    world.reactors.push({
      id: reactor.id,
      formulaId: formula.id,
      code: null,
      createdBy: admin.applicationId,
      author: null,
      app: 'application' in application ? owner.model : null,
    });
  }
  const block = await vault.reactors.create(admin, { name: 'tokenize', code: TOKENIZE, application: { id: owner.model.id } });
  world.reactors.push({ id: block.id, formulaId: null, code: TOKENIZE, createdBy: admin.applicationId, author: null, app: owner.model });
  await world.refresh();
  return world;
}

/** The rules as given (an application without rules gets the implicit ones, which the model derives itself). */
function specRules(spec: { rules: AccessRule[] }): AccessRule[] {
  return spec.rules.map((rule) => ({ ...rule, permissions: [...new Set(rule.permissions)] }));
}

/** The proxy's destination in this test: it answers with the body and x-echo header it received. */
const echoDestination = (async (_url: unknown, init?: RequestInit) => {
  const headers = new Headers(init?.headers);
  const body = new TextDecoder().decode(init?.body as Uint8Array);
  return new Response(JSON.stringify({ body: JSON.parse(body) as unknown, header: headers.get('x-echo') }), { status: 200 });
}) as typeof fetch;

describeEachStore('no caller learns more than its read transform reveals (property)', (store) => {
  const runs = FUZZ_RUNS > 0 ? FUZZ_RUNS : store.name === 'sqlite' ? 150 : 40;
  it(`holds over ${runs} random sequences of operations`, { timeout: 600_000 }, async () => {
    await fc.assert(
      // The proxy plan is drawn last, so the sequences drawn before it are those of the seed without it.
      fc.asyncProperty(
        fc.array(appSpec, { minLength: 2, maxLength: 4 }),
        fc.array(op, { minLength: 5, maxLength: 25 }),
        fc.integer(),
        proxyPlan,
        async (specs, ops, seed, plan) => {
          const made = store.create();
          const vault = await createTestVault({ start: SUITE_START, store: made, proxy: { unsafeFetch: echoDestination } });
          try {
            const world = await setUp(vault, specs, seed);
            const proxies = new ProxySteps(
              {
                vault,
                admin: world.admin,
                actors: () => world.actors,
                applications: () => world.applications(),
                checkTokens: (label, value) => world.check(label, value, [], null),
              },
              plan,
            );
            for (const [i, o] of ops.entries()) {
              await step(world, o);
              await proxies.step(i);
            }
            await proxies.rest(ops.length);
          } finally {
            await vault.close();
            await store.cleanup(made);
          }
        },
      ),
      { numRuns: runs, ...(FUZZ_RUNS > 0 ? {} : { seed: 20261123 }) },
    );
  });
});
