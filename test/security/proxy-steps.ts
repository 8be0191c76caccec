/**
 * Pre-configured proxies in the no-leak property (no-leak.property.test.ts, docs/proxies.md,
 * docs/authority.md): the `/proxies` operations (create, get, list, PUT, merge patch, delete, key
 * rotation), taken between the property's own steps by applications that hold proxy permissions
 * (drawn here: tenant administrators, management applications with some proxy permissions, private
 * applications with token grants), by the property's actors (and sessions), and by an administrator
 * of another tenant. Their draws come after the property's own, so its sequences stay as they were.
 *
 * After every operation:
 * - it succeeded exactly when the reference model entitles its caller: the permission; binding,
 *   or changing a proxy bound to, an application needs a tenant administrator or a caller covering
 *   it (as it is now); changing destination, configuration, require_auth or the key needs the
 *   proxy's author or an administrator; another tenant's proxy or application is not there;
 * - the proxy is as the model has it (read back by the administrator): nothing was changed by a
 *   refused operation;
 * - no answer or error shows a configuration value (never, to anyone) or a proxy key (only the
 *   answer of the create or rotation that made it, as `key`), nor any token secret or token id;
 * - the bound application is shown (`application: { id }`, `application_id`) exactly to a caller
 *   the model lets act as it, and configuration only as its names with masked values;
 * - a list holds exactly the tenant's live proxies.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { InternalError, VaultError } from '../../src/errors/errors.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import type { TestVault } from '../../src/testing/index.js';
import { type ModelApp, RULE_CONTAINERS, TOKEN_PERMISSIONS, modelMayActAs, modelMayRecode } from './reference-model.js';

const PROXY: Permission[] = ['proxy:create', 'proxy:read', 'proxy:update', 'proxy:delete'];
const MASKED = '********';

const proxyActorSpec = fc.oneof(
  fc.constant({ type: 'management' as const, permissions: ['application:create', 'application:update', ...PROXY] as Permission[], rules: [] as AccessRule[] }),
  fc.record({
    type: fc.constant('management' as const),
    permissions: fc.subarray([...PROXY, 'application:read', 'reactor:create'] as Permission[], { minLength: 1 }),
    rules: fc.constant<AccessRule[]>([]),
  }),
  fc.record({
    type: fc.constant('private' as const),
    permissions: fc
      .tuple(fc.subarray(PROXY, { minLength: 1 }), fc.subarray([...TOKEN_PERMISSIONS, 'reactor:create', 'reactor:read', 'reactor:update'] as Permission[]))
      .map(([a, b]) => [...a, ...b]),
    // Reveal on everything (covers many applications) or on one subtree (covers few).
    rules: fc.constantFrom(...RULE_CONTAINERS).map((container): AccessRule[] => [{ priority: 0, container, transform: 'reveal', permissions: [...TOKEN_PERMISSIONS] }]),
  }),
);

const n = fc.nat(60);
const PATCHES = ['name', 'destination', 'configuration', 'unconfigure', 'require_auth', 'bind', 'unbind'] as const;
const proxyOp = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('create' as const), actor: n, app: fc.option(n, { freq: 3 }), configured: fc.boolean() }), weight: 3 },
  fc.record({ kind: fc.constant('get' as const), actor: n, target: n }),
  fc.record({ kind: fc.constant('list' as const), actor: n }),
  { arbitrary: fc.record({ kind: fc.constant('patch' as const), actor: n, target: n, what: fc.constantFrom(...PATCHES), app: n }), weight: 3 },
  fc.record({ kind: fc.constant('put' as const), actor: n, target: n, configured: fc.boolean(), keep: fc.boolean() }),
  fc.record({ kind: fc.constant('delete' as const), actor: n, target: n }),
  { arbitrary: fc.record({ kind: fc.constant('rotate' as const), actor: n, target: n }), weight: 2 },
  fc.record({ kind: fc.constant('foreign' as const), target: n, how: fc.constantFrom('get', 'patch', 'delete', 'rotate', 'list', 'reach', 'bind') }),
);
type ProxyOp = typeof proxyOp extends fc.Arbitrary<infer T> ? T : never;
const NEEDS: Record<Exclude<ProxyOp['kind'], 'foreign'>, Permission> = {
  create: 'proxy:create',
  get: 'proxy:read',
  list: 'proxy:read',
  patch: 'proxy:update',
  put: 'proxy:update',
  delete: 'proxy:delete',
  rotate: 'proxy:update',
};

/** The proxy part of a run: the applications that hold proxy permissions, then the operations. */
export const proxyPlan = fc.record({ specs: fc.array(proxyActorSpec, { minLength: 1, maxLength: 3 }), ops: fc.array(proxyOp, { maxLength: 10 }) });
export type ProxyPlan = typeof proxyPlan extends fc.Arbitrary<infer T> ? T : never;

interface Principal {
  caller: Caller;
  model: ModelApp;
}

/** What the property gives this part: its vault, its administrator, and its actors as they are now. */
export interface ProxyWorld {
  vault: TestVault;
  admin: Caller;
  /** The property's actors (sessions included), their models kept current by its grant changes. */
  actors(): Principal[];
  /** The applications proxies may be bound to (not sessions). */
  applications(): Principal[];
  /** Fails when `value` shows a token secret or token id (no reader: proxies answers carry none). */
  checkTokens(label: string, value: unknown): void;
}

interface ModelProxy {
  id: string;
  createdBy: string;
  destination: string;
  configuration: Record<string, string> | null;
  requireAuth: boolean;
  /** The application it is bound to (the property's model object: its grant changes show here). */
  app: ModelApp | null;
  live: boolean;
}

interface ProxyAnswer {
  id: string;
  name: string;
  destination_url: string;
  configuration: Record<string, string> | null;
  application: unknown;
  application_id?: string;
  require_auth: boolean;
  key?: string;
}

interface Foreign {
  admin: Caller;
  app: string;
  proxy: string;
}

/** Runs the plan's operations between the property's steps: `step(i)` after its i-th, `rest()` at the end. */
export class ProxySteps {
  readonly #world: ProxyWorld;
  readonly #plan: ProxyPlan;
  #principals: Principal[] | null = null;
  #foreign: Foreign | null = null;
  readonly #proxies: ModelProxy[] = [];
  /** Every configuration value and proxy key that ever existed (this tenant's and the other's). */
  readonly #values = new Set<string>();
  readonly #keys = new Set<string>();
  #counter = 0;

  constructor(world: ProxyWorld, plan: ProxyPlan) {
    this.#world = world;
    this.#plan = plan;
  }

  async step(i: number): Promise<void> {
    const o = this.#plan.ops[i];
    if (o !== undefined) await this.#act(o);
  }

  async rest(from: number): Promise<void> {
    for (let i = from; i < this.#plan.ops.length; i++) await this.step(i);
  }

  async #setUp(): Promise<Principal[]> {
    if (this.#principals) return this.#principals;
    const principals: Principal[] = [];
    for (const [i, spec] of this.#plan.specs.entries()) {
      const caller = await this.#world.vault.caller({ name: `proxy app ${i}`, ...spec });
      principals.push({ caller, model: { id: caller.applicationId, type: spec.type, permissions: [...caller.permissions], rules: spec.rules.map((r) => ({ ...r })) } });
    }
    const { admin, vault } = this.#world;
    principals.push({ caller: admin, model: { id: admin.applicationId, type: 'management', permissions: [...admin.permissions], rules: [] } });
    // The administrator's proxies, one unbound and one bound to the property's owner: every other
    // caller is not their author, so changing what they do is refused unless it is an administrator.
    for (const bound of [null, this.#world.applications()[0]!.model]) {
      const configuration = { API_KEY: this.#secret() };
      const made = await vault.proxies.create(admin, {
        name: 'admin',
        destination_url: 'https://api.example.com/v1/',
        configuration,
        ...(bound ? { application: { id: bound.id } } : {}),
      });
      this.#keys.add(made.key!);
      this.#proxies.push({ id: made.id, createdBy: admin.applicationId, destination: made.destination_url, configuration, requireAuth: true, app: bound, live: true });
    }
    return (this.#principals = principals);
  }

  /** Another tenant, with a private application and a configured proxy of its own. */
  async #other(): Promise<Foreign> {
    if (this.#foreign) return this.#foreign;
    const { vault } = this.#world;
    const { application } = await vault.createTenant({ name: 'other' });
    const admin = await vault.authenticate(application.key);
    const app = await vault.applications.create(admin, { name: 'other app', type: 'private', permissions: ['token:create'] });
    const proxy = await vault.proxies.create(admin, { name: 'theirs', destination_url: 'https://other.example.com/', configuration: { K: this.#secret() } });
    this.#keys.add(proxy.key!);
    return (this.#foreign = { admin, app: app.id, proxy: proxy.id });
  }

  #secret(): string {
    const value = `proxy-config-secret-${++this.#counter}-${Math.random().toString(36).slice(2, 10)}`;
    this.#values.add(value);
    return value;
  }

  async #act(o: ProxyOp): Promise<void> {
    const principals = await this.#setUp();
    if (o.kind === 'foreign') return this.#foreignStep(o);
    // Mostly the applications holding proxy permissions; the property's actors (who hold none) now and then.
    // Mostly an application holding the operation's permission (refusals then come from the rules
    // that matter); a quarter of the time anyone, the property's actors (which hold none) included.
    const all = [...principals, ...this.#world.actors()];
    const holders = principals.filter((p) => p.model.permissions.includes(NEEDS[o.kind]));
    const among = o.actor % 4 === 0 || holders.length === 0 ? all : holders;
    const actor = among[(o.actor >> 2) % among.length]!;
    const has = (p: Permission) => actor.model.permissions.includes(p);
    const label = `proxy ${o.kind}${'what' in o ? ` (${o.what})` : ''} by ${actor.model.type} ${JSON.stringify(actor.model.permissions)} ${JSON.stringify(actor.model.rules)}`;
    const targets = [...this.#world.applications(), ...principals];
    const live = this.#proxies.filter((p) => p.live);
    const proxy = 'target' in o ? (live.length > 0 ? live : this.#proxies)[o.target % Math.max(1, live.length > 0 ? live.length : this.#proxies.length)] : undefined;
    const { vault } = this.#world;

    if (o.kind === 'create') {
      const bound = o.app === null ? null : targets[o.app % targets.length]!.model;
      const configuration = o.configured ? { API_KEY: this.#secret() } : null;
      const result = await this.#attempt(label, () =>
        vault.proxies.create(actor.caller, {
          name: 'p',
          destination_url: 'https://api.example.com/v1/',
          ...(configuration ? { configuration } : {}),
          ...(bound ? { application: { id: bound.id } } : {}),
        }),
      );
      const entitled = has('proxy:create') && (bound === null || (bound.type !== 'management' && modelMayActAs(actor.model, bound)));
      expect(result.ok, `${label} bound to ${bound?.type ?? 'nothing'}: ${result.ok ? 'created' : 'refused'}`).toBe(entitled);
      if (!result.ok) return;
      const created: ModelProxy = {
        id: result.value.id,
        createdBy: actor.model.id,
        destination: 'https://api.example.com/v1/',
        configuration,
        requireAuth: true,
        app: bound,
        live: true,
      };
      this.#proxies.push(created);
      this.#checkAnswer(label, result.value, actor, created, true);
      return this.#checkStored(label, created);
    }
    if (o.kind === 'list') {
      const result = await this.#attempt(label, () => vault.proxies.list(actor.caller, { size: 100 }));
      expect(result.ok, `${label}: ${result.ok ? 'listed' : 'refused'}`).toBe(has('proxy:read'));
      if (!result.ok) return;
      const views = result.value.data as unknown as ProxyAnswer[];
      expect(views.map((v) => v.id).sort(), `${label}: listed proxies`).toEqual(
        this.#proxies
          .filter((p) => p.live)
          .map((p) => p.id)
          .sort(),
      );
      for (const view of views)
        this.#checkAnswer(
          label,
          view,
          actor,
          this.#proxies.find((p) => p.id === view.id)!,
          false,
        );
      return;
    }
    if (proxy === undefined) return;
    /** Any change to a proxy bound to an application needs acting as it (as it is now). */
    const mayChange = proxy.live && (proxy.app === null || modelMayActAs(actor.model, proxy.app));
    const mayReconfigure = modelMayRecode(actor.model, proxy.createdBy);
    const plabel = `${label} on a proxy by ${proxy.createdBy === actor.model.id ? 'itself' : 'another'}, bound to ${proxy.app ? `${proxy.app.type} ${JSON.stringify(proxy.app.permissions)}` : 'nothing'}`;

    switch (o.kind) {
      case 'get': {
        const result = await this.#attempt(plabel, () => vault.proxies.get(actor.caller, proxy.id));
        expect(result.ok, `${plabel}: ${result.ok ? 'read' : 'refused'}`).toBe(has('proxy:read') && proxy.live);
        if (result.ok) this.#checkAnswer(plabel, result.value, actor, proxy, false);
        return;
      }
      case 'delete': {
        const result = await this.#attempt(plabel, () => vault.proxies.delete(actor.caller, proxy.id));
        expect(result.ok, `${plabel}: ${result.ok ? 'deleted' : 'refused'}`).toBe(has('proxy:delete') && mayChange);
        if (result.ok) proxy.live = false;
        return this.#checkStored(plabel, proxy);
      }
      case 'rotate': {
        const result = await this.#attempt(plabel, () => vault.proxies.rotateKey(actor.caller, proxy.id));
        expect(result.ok, `${plabel}: ${result.ok ? 'rotated' : 'refused'}`).toBe(has('proxy:update') && mayChange && mayReconfigure);
        if (result.ok) this.#checkAnswer(plabel, result.value, actor, proxy, true);
        return this.#checkStored(plabel, proxy);
      }
      case 'put': {
        // A whole replacement, the destination as it is: with a fresh secret, or none (which removes any).
        const configuration = o.configured ? { API_KEY: this.#secret() } : null;
        const keep = o.keep && proxy.app !== null;
        const body = {
          name: 'replaced',
          destination_url: proxy.destination,
          require_auth: proxy.requireAuth,
          ...(configuration ? { configuration } : {}),
          ...(keep ? { application: { id: proxy.app!.id } } : {}),
        };
        const result = await this.#attempt(plabel, () => vault.proxies.update(actor.caller, proxy.id, body));
        const reconfigures = configuration !== null || proxy.configuration !== null;
        expect(result.ok, `${plabel}: ${result.ok ? 'replaced' : 'refused'}`).toBe(has('proxy:update') && mayChange && (!reconfigures || mayReconfigure));
        if (result.ok) {
          Object.assign(proxy, { configuration, app: keep ? proxy.app : null });
          this.#checkAnswer(plabel, result.value, actor, proxy, false);
        }
        return this.#checkStored(plabel, proxy);
      }
      case 'patch': {
        const target = targets[o.app % targets.length]!.model;
        const tag = ++this.#counter;
        const secret = o.what === 'configuration' ? this.#secret() : '';
        const patch: Record<string, unknown> = {
          name: { name: 'renamed' },
          destination: { destination_url: `https://api${tag}.example.com/` },
          configuration: { configuration: { [`K${tag}`]: secret } },
          unconfigure: { configuration: null },
          require_auth: { require_auth: !proxy.requireAuth },
          bind: { application: { id: target.id } },
          unbind: { application: null },
        }[o.what];
        const result = await this.#attempt(plabel, () => vault.proxies.patch(actor.caller, proxy.id, patch));
        const reconfigures = o.what === 'destination' || o.what === 'configuration' || o.what === 'require_auth' || (o.what === 'unconfigure' && proxy.configuration !== null);
        const binds = o.what === 'bind' && target.id !== proxy.app?.id;
        const entitled =
          has('proxy:update') &&
          mayChange &&
          (!reconfigures || mayReconfigure) &&
          (o.what !== 'bind' || target.type !== 'management') &&
          (!binds || modelMayActAs(actor.model, target));
        const tlabel = o.what === 'bind' ? `${plabel} to ${target.type} ${JSON.stringify(target.permissions)}` : plabel;
        expect(result.ok, `${tlabel}: ${result.ok ? 'changed' : 'refused'}`).toBe(entitled);
        if (result.ok) {
          if (o.what === 'destination') proxy.destination = (patch as { destination_url: string }).destination_url;
          if (o.what === 'configuration') proxy.configuration = { ...proxy.configuration, [`K${tag}`]: secret };
          if (o.what === 'unconfigure') proxy.configuration = null;
          if (o.what === 'require_auth') proxy.requireAuth = !proxy.requireAuth;
          if (o.what === 'bind') proxy.app = target;
          if (o.what === 'unbind') proxy.app = null;
          this.#checkAnswer(tlabel, result.value, actor, proxy, false);
        }
        return this.#checkStored(tlabel, proxy);
      }
    }
  }

  /** Another tenant's administrator reaches for this tenant's proxies, and this tenant's callers for the other's. */
  async #foreignStep(o: Extract<ProxyOp, { kind: 'foreign' }>): Promise<void> {
    const foreign = await this.#other();
    const { vault, admin } = this.#world;
    const proxy = this.#proxies[o.target % Math.max(1, this.#proxies.length)];
    const label = `another tenant's ${o.how}`;
    if (o.how === 'list') {
      const result = await this.#attempt(label, () => vault.proxies.list(foreign.admin, { size: 100 }));
      expect(result.ok && result.value.data.map((p) => p.id), `${label}: its own proxies only`).toEqual([foreign.proxy]);
      return;
    }
    if (o.how === 'reach' || o.how === 'bind') {
      // This tenant's administrator: the other tenant's proxy is not there, nor its application to bind to.
      const result = await this.#attempt(label, () =>
        o.how === 'reach'
          ? vault.proxies.patch(admin, foreign.proxy, { destination_url: 'https://evil.example.com/' })
          : vault.proxies.create(admin, { name: 'x', destination_url: 'https://api.example.com/', application: { id: foreign.app } }),
      );
      expect(result.ok, `${label}: ${result.ok ? 'reached the other tenant' : 'refused'}`).toBe(false);
      return;
    }
    if (proxy === undefined) return;
    const calls: Record<'get' | 'patch' | 'delete' | 'rotate', () => Promise<unknown>> = {
      get: () => vault.proxies.get(foreign.admin, proxy.id),
      patch: () => vault.proxies.patch(foreign.admin, proxy.id, { destination_url: 'https://evil.example.com/', application: null }),
      delete: () => vault.proxies.delete(foreign.admin, proxy.id),
      rotate: () => vault.proxies.rotateKey(foreign.admin, proxy.id),
    };
    const result = await this.#attempt(label, calls[o.how]);
    expect(result.ok, `${label}: ${result.ok ? 'reached this tenant' : 'refused'}`).toBe(false);
    return this.#checkStored(label, proxy);
  }

  /** Runs `fn`; a refusal (a VaultError other than an internal one) is checked for secrets like an answer. */
  async #attempt<T>(label: string, fn: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false }> {
    let value: unknown;
    let ok = true;
    try {
      value = await fn();
    } catch (error) {
      if (!(error instanceof VaultError) || error instanceof InternalError) throw error;
      value = { message: error.message, errors: (error as { errors?: unknown }).errors };
      ok = false;
    }
    const { key, ...rest } = (value ?? {}) as { key?: unknown };
    const text = JSON.stringify(ok ? rest : value) ?? '';
    for (const secret of this.#values) expect(text.includes(secret), `${label} shows a configuration value`).toBe(false);
    for (const old of this.#keys) {
      expect(text.includes(old), `${label} shows a proxy key`).toBe(false);
      expect(key, `${label} answers with a key shown before`).not.toBe(old);
    }
    this.#world.checkTokens(label, value);
    if (typeof key === 'string') this.#keys.add(key);
    return ok ? { ok: true, value: value as T } : { ok: false };
  }

  /** An answer about `proxy` to `actor`: the application only to who may act as it, configuration masked, the key only when made. */
  #checkAnswer(label: string, value: unknown, actor: Principal, proxy: ModelProxy, keyed: boolean): void {
    const view = value as ProxyAnswer;
    const shown = proxy.app !== null && modelMayActAs(actor.model, proxy.app);
    const expected = proxy.app === null ? [null, undefined] : shown ? [{ id: proxy.app.id }, proxy.app.id] : [{ redacted: true }, undefined];
    expect([view.application, view.application_id], `${label}: the bound application as shown`).toEqual(expected);
    const names = proxy.configuration === null ? null : Object.fromEntries(Object.keys(proxy.configuration).map((name) => [name, MASKED]));
    expect(view.configuration, `${label}: configuration`).toEqual(names);
    expect(typeof view.key === 'string', `${label}: ${keyed ? 'no key where one was made' : 'a key shown again'}`).toBe(keyed);
    if (keyed) expect(view.key, `${label}: the key`).toMatch(/^tvp_/);
  }

  /** The proxy as the administrator reads it is the model's: a refused operation changed nothing. */
  async #checkStored(label: string, proxy: ModelProxy): Promise<void> {
    const admin = this.#world.admin;
    const read = await this.#world.vault.proxies.get(admin, proxy.id).then(
      (view) => view as unknown as ProxyAnswer,
      (error: unknown) => {
        if (!(error instanceof VaultError)) throw error;
        return null;
      },
    );
    expect(read !== null, `${label}: ${read ? 'still there' : 'gone'}`).toBe(proxy.live);
    if (read === null) return;
    const names = proxy.configuration === null ? null : Object.keys(proxy.configuration).sort();
    expect(
      [read.destination_url, read.configuration === null ? null : Object.keys(read.configuration).sort(), read.require_auth, read.application_id ?? null],
      `${label}: the proxy as stored`,
    ).toEqual([proxy.destination, names, proxy.requireAuth, proxy.app?.id ?? null]);
  }
}
