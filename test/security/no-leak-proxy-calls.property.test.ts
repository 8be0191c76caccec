/**
 * Proxy calls join the no-leak property (docs/proxies.md, docs/authority.md): no sequence
 * of ephemeral and keyed proxy calls lets a caller, a destination or a proxy's transforms obtain
 * data or power the model does not entitle them to. The CRUD of /proxies is in
 * no-leak.property.test.ts (proxy-steps.ts); this file is the calls, on the same reference model.
 *
 * fast-check draws, per run, a fresh tenant of one shared vault per store: callers (private
 * applications with some of proxy:invoke, token:use, token:read and random rules; a public one),
 * applications to bind proxies to (some of token:create, token:read, token:use, random rules), and
 * proxies (require_auth or not, bound or not, by an administrator or by a private application
 * covering the application, configured or not, request transforms code and tokenize and response
 * transforms code, mask, tokenize, append_json and append_header, each drawn, in a drawn order).
 * Then a sequence of: tokens created with varied containers; ephemeral calls naming tokens in the
 * body and a header (one of another tenant, sometimes); keyed calls (current, rotated, unknown or
 * another tenant's key; authenticated or anonymous; a token for the code transforms to read through
 * `req.bt`; the destination answering 200 or 422); key rotations; an application widened by the
 * administrator after a binding; the key of the application that made proxies regenerated (their
 * keys then open nothing, for anyone, until an administrator confirms them or rotates their key) or a
 * bound application's (which ends nothing); an administrator's confirmation (proxy-maker-steps.ts); another tenant's caller with this tenant's key or token. Calls go
 * in-process (`vault.proxy`) or over HTTP (`createFetchHandler`, the key in the header or query).
 * After every step:
 * - a call succeeds exactly when the model entitles it: proxy:invoke (authenticated calls), every
 *   named token usable (token:use) by the caller, the key current and this tenant's, require_auth
 *   honoured, a tokenize transform's application allowed to create there; a refused request
 *   transform or check sends nothing;
 * - the destination receives a token's plaintext only for tokens the caller may use with reveal
 *   (authenticated; an anonymous call's expressions arrive as written), or that the bound
 *   application may read with reveal within its grants at binding (a code transform's `req.bt`),
 *   and receives it whenever that entitles it (never more, never the caller's authority);
 * - tokens a tokenize transform made are the proxy tenant's, read by callers exactly per their
 *   token:read rules, and never by another tenant; the destination never receives the card it replaced;
 * - no answer, error, log line or audit entry shows a proxy key, an API key, a configuration value,
 *   or a token's plaintext the caller was not entitled to; each call leaves the audit entries
 *   docs/proxies.md lists (one per call naming a tenant: a current key's, or an application's with
 *   a key that opens nothing, in its own tenant naming no proxy), with exactly the fields it lists.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import type { Logger } from '../../src/common/logger.js';
import { VaultError } from '../../src/errors/errors.js';
import type { Permission } from '../../src/permissions/permissions.js';
import { createTestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { type ModelApp, TOKEN_CONTAINERS, TOKEN_PERMISSIONS, modelTransform } from './reference-model.js';
import { madeBy, rotatedByAdministrator, runMakerStep } from './proxy-maker-steps.js';
import { type RangedStep, isRanged, runRangedStep, withRanged } from './proxy-range-steps.js';
import { Destination, FUZZ_RUNS, type ProxySpec, type Step, actorSpec, boundSpec, proxySpec, step, transformsOf } from './proxy-call-fixtures.js';
import {
  AUDIT_FIELDS,
  INVALID_KEY_AUDIT_FIELDS,
  KEYED_AUDIT_FIELDS,
  type Outcome,
  type PProxy,
  type PToken,
  type Principal,
  REVEAL_ALL,
  type Shared,
  call,
  cardNumber,
  checkShown,
  fresh,
  makeShared,
  principal,
} from './proxy-call-harness.js';

/** Steps by kind and outcome, printed with the run's time (so a change that makes every call fail shows). */
const tally = new Map<string, number>();

describeEachStore('proxy calls: no caller, destination or transform learns more than its grants allow (property)', (store) => {
  const runs = FUZZ_RUNS > 0 ? FUZZ_RUNS : store.name === 'sqlite' ? 80 : 35;
  it(`holds over ${runs} random sequences of proxy calls`, { timeout: 600_000 }, async () => {
    const logged: string[] = [];
    const line = (m: string, f?: unknown) => logged.push(`${m} ${JSON.stringify(f ?? {})}`);
    const logger: Logger = { info: line, warn: line, error: line };
    const destination = new Destination();
    const made = store.create();
    const many = { requests: 1_000_000, windowMs: 1000 };
    const vault = await createTestVault({ store: made, logger, proxy: { unsafeFetch: destination.fetch, inboundRateLimit: { perKey: many, perAddress: many } } });
    const started = performance.now();
    try {
      const shared = await makeShared(vault, destination, logged);
      await fc.assert(
        fc.asyncProperty(
          fc.array(actorSpec, { minLength: 2, maxLength: 4 }),
          fc.array(boundSpec, { minLength: 1, maxLength: 3 }),
          fc.array(proxySpec, { minLength: 1, maxLength: 3 }),
          fc.array(withRanged(step), { minLength: 4, maxLength: 14 }),
          async (actorSpecs, boundSpecs, proxySpecs, steps) => runSequence(shared, actorSpecs, boundSpecs, proxySpecs, steps),
        ),
        { numRuns: runs, ...(FUZZ_RUNS > 0 ? {} : { seed: 20261127 }) },
      );
    } finally {
      await vault.close();
      await store.cleanup(made);
    }
    console.info(
      `proxy-call property on ${store.name}: ${runs} runs in ${Math.round(performance.now() - started)} ms; steps ${JSON.stringify(Object.fromEntries([...tally].sort()))}`,
    );
    tally.clear();
  });
});

type Specs<T> = T extends fc.Arbitrary<infer U> ? U : never;

async function runSequence(
  shared: Shared,
  actorSpecs: Specs<typeof actorSpec>[],
  boundSpecs: Specs<typeof boundSpec>[],
  proxySpecs: ProxySpec[],
  steps: (Step | RangedStep)[],
): Promise<void> {
  const { vault } = shared;
  // Each run checks its own values and the other tenant's (checking every earlier run's too would grow with the runs).
  shared.secrets = new Set(shared.base.secrets);
  shared.never = new Set(shared.base.never);
  shared.logged.length = 0;
  shared.destination.received.length = 0;
  const { application } = await vault.createTenant({ name: 'run' });
  shared.never.add(application.key);
  const admin = await vault.authenticate(application.key);
  const owner = await principal(shared, admin, { type: 'private', permissions: [...TOKEN_PERMISSIONS], rules: REVEAL_ALL });
  const binder = await principal(shared, admin, { type: 'private', permissions: [...TOKEN_PERMISSIONS, 'proxy:create'], rules: REVEAL_ALL });
  const actors: Principal[] = [];
  for (const spec of actorSpecs) actors.push(await principal(shared, admin, spec));
  const bound: Principal[] = [];
  for (const spec of boundSpecs) bound.push(await principal(shared, admin, { type: 'private', ...spec }));
  const proxies: PProxy[] = [];
  for (const spec of proxySpecs) {
    const app = spec.app === null ? null : bound[spec.app % bound.length]!;
    const config = spec.configured ? `config-secret-${fresh()}` : null;
    if (config !== null) shared.never.add(config);
    const maker = spec.byBinder ? binder.caller : admin;
    const created = await vault.proxies.create(maker, {
      name: 'p',
      destination_url: 'https://api.example.com/v1',
      require_auth: spec.requireAuth,
      ...(app ? { application: { id: app.model.id } } : {}),
      ...(config ? { configuration: { API_KEY: config } } : {}),
      ...transformsOf(spec),
    } as never);
    shared.never.add(created.key!);
    proxies.push({
      spec,
      id: created.id,
      key: created.key!,
      oldKeys: [],
      app,
      atBinding: app && spec.byBinder ? structuredClone(app.model) : null,
      config,
      ...madeBy(spec.byBinder),
    });
  }
  const tokens: PToken[] = [];
  const world: World = { shared, admin, owner, binder, actors, bound, proxies, tokens };
  await createToken(world, true, ['/pci/high/']);
  await createToken(world, false, ['/general/high/']);
  for (const s of steps) await (isRanged(s) ? runRangedStep(shared, proxies, s) : runStep(world, s));
}

interface World {
  shared: Shared;
  admin: Caller;
  owner: Principal;
  /** The private application that makes the proxies not made by the administrator. */
  binder: Principal;
  actors: Principal[];
  bound: Principal[];
  proxies: PProxy[];
  tokens: PToken[];
}

async function createToken(world: World, card: boolean, containers: string[]): Promise<void> {
  const secret = card ? cardNumber() : `S3CR3T-${fresh()}`;
  world.shared.secrets.add(secret);
  const data = card ? { number: secret, expiration_month: 12, expiration_year: 2031 } : secret;
  const token = await world.shared.vault.tokens.create(world.owner.caller, { type: card ? 'card' : 'token', data, containers });
  world.tokens.push({ id: token.id, containers, secret, card });
}

/** The proxy's application as its transforms act: within its grants now and, bound by a non-administrator, those at binding. */
function actingApp(proxy: PProxy): ModelApp | null {
  if (proxy.app === null) return null;
  return proxy.atBinding === null ? proxy.app.model : { ...proxy.app.model, bound: proxy.atBinding };
}

async function auditEntries(world: World): Promise<{ count: number; last: Record<string, unknown> | undefined; text: string }> {
  const page = await world.shared.vault.logs.list(world.admin, { operation: 'proxy:invoke', size: 100 });
  const entries = page.data as unknown as Record<string, unknown>[];
  // Oldest first: the newest is the page's last.
  const last = entries.at(-1);
  return { count: entries.length, last, text: JSON.stringify(entries) };
}

async function runStep(world: World, s: Step): Promise<void> {
  const { shared, tokens, proxies } = world;
  const logsBefore = shared.logged.length;
  const audit = await auditEntries(world);
  const sentBefore = shared.destination.received.length;
  let expected: { sent: boolean; audited: 0 | 1; ok: boolean | null } = { sent: false, audited: 0, ok: null };
  let outcome: Outcome | null = null;
  /** A keyed call refused after it was sent (a response tokenize not allowed): the tokens its request tokenize made. */
  let createdBeforeFailing: number | null = null;
  const label = JSON.stringify(s);

  if (s.kind === 'token') {
    await createToken(world, s.card, s.containers);
    return;
  }
  if (s.kind === 'rotate') {
    const proxy = proxies[s.proxy % proxies.length]!;
    const rotated = await shared.vault.proxies.rotateKey(world.admin, proxy.id);
    shared.never.add(rotated.key!);
    proxy.oldKeys.push(proxy.key);
    proxy.key = rotated.key!;
    rotatedByAdministrator(proxy);
    return;
  }
  if (s.kind === 'regenerate' || s.kind === 'confirm') {
    await runMakerStep(world, s);
    return;
  }
  if (s.kind === 'widen') {
    // The administrator widens an application after proxies were bound to it: only an
    // administrator's binding follows (docs/authority.md, "A binding or a key carries its maker's reach").
    const app = world.bound[s.app % world.bound.length]!;
    await shared.vault.applications.update(world.admin, app.model.id, { name: 'widened', permissions: [...TOKEN_PERMISSIONS], rules: REVEAL_ALL } as never);
    app.model = { ...app.model, permissions: [...TOKEN_PERMISSIONS], rules: REVEAL_ALL };
    app.caller = await shared.vault.authenticate(app.key);
    return;
  }

  const named = 'named' in s ? s.named.map((x) => ({ token: tokens[x.token % tokens.length]!, whole: x.whole })) : [];
  const foreignToken = 'foreignToken' in s && s.foreignToken ? shared.foreign.token : null;
  const expressions = named.map(({ token, whole }) => (token.card && !whole ? `{{ ${token.id} | json: '$.number' }}` : `{{ ${token.id} }}`));
  if (foreignToken) expressions.push(`{{ ${foreignToken.id} }}`);
  const card = cardNumber();
  shared.secrets.add(card);
  const probeToken = s.kind === 'keyed' && s.probe !== null ? tokens[s.probe % tokens.length]! : null;
  const body = JSON.stringify({ refs: expressions, card: { number: card, expiration_month: 12, expiration_year: 2031 }, ...(probeToken ? { probe: probeToken.id } : {}) });
  const headers = { 'content-type': 'application/json', ...(expressions.length > 0 ? { 'x-echo': expressions[0]! } : {}) };
  /** What the destination may receive in plaintext, and what the caller may see. */
  const toDestination = new Set<string>([card]);
  const toCaller = new Set<string>([card]);
  const mustReach: string[] = [];

  if (s.kind === 'foreign') {
    const proxy = proxies[s.proxy % proxies.length]!;
    const reader = shared.foreign.reader;
    outcome =
      s.how === 'their caller, our key'
        ? await call(shared, 'in-process', reader, { key: proxy.key, headers, body })
        : await call(shared, 'in-process', reader, {
            url: 'https://api.example.com',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ n: `{{ ${tokens[s.proxy % tokens.length]!.id} }}` }),
          });
    expected = { sent: false, audited: 0, ok: false };
  } else if (s.kind === 'ephemeral') {
    const actor = world.actors[s.actor % world.actors.length]!;
    const has = (p: Permission) => actor.model.permissions.includes(p);
    const usable = named.every(({ token }) => modelTransform(actor.model, 'token:use', token.containers) !== null);
    const ok = has('proxy:invoke') && usable && foreignToken === null;
    for (const { token } of named) {
      if (modelTransform(actor.model, 'token:use', token.containers) !== 'reveal') continue;
      toDestination.add(token.secret);
      toCaller.add(token.secret);
      mustReach.push(token.secret);
    }
    outcome = await call(shared, s.via, actor, { url: 'https://api.example.com', headers, body });
    expected = { sent: ok, audited: 1, ok };
  } else {
    const proxy = proxies[s.proxy % proxies.length]!;
    const actor = s.actor === null ? null : world.actors[s.actor % world.actors.length]!;
    const key =
      s.key === 'current' ? proxy.key : s.key === 'rotated' && proxy.oldKeys.length > 0 ? proxy.oldKeys[0]! : s.key === 'foreign' ? shared.foreign.proxyKey : `tvp_${fresh()}`;
    const valid = s.key === 'current';
    const app = actingApp(proxy);
    const { request, response } = proxy.spec;
    const containerOf = (c: number | null, fallback: string) => (c === null ? fallback : TOKEN_CONTAINERS[c]!);
    const requestContainer = containerOf(proxy.spec.requestContainer, '/pci/high/');
    const responseContainer = containerOf(proxy.spec.responseContainer, '/general/high/');
    const mayCreate = (container: string) => app !== null && modelTransform(app, 'token:create', [container]) !== null;
    // A key whose maker's credentials changed since opens nothing until confirmed or rotated (a 401, audited).
    const reaches = valid && !proxy.ended && !(actor === null && proxy.spec.requireAuth);
    if (valid && proxy.ended) tally.set('keyed:ended key', (tally.get('keyed:ended key') ?? 0) + 1);
    const checksPass =
      reaches &&
      (actor === null ||
        (actor.model.permissions.includes('proxy:invoke') &&
          foreignToken === null &&
          named.every(({ token }) => modelTransform(actor.model, 'token:use', token.containers) !== null)));
    const sent = checksPass && (!request.includes('tokenize') || mayCreate(requestContainer));
    shared.destination.failWith = s.failing ? 422 : null;
    const transformed = !s.failing && response.length > 0;
    const ok = sent && (!transformed || !response.includes('tokenize') || mayCreate(responseContainer));
    if (actor !== null) {
      for (const { token } of named) {
        if (modelTransform(actor.model, 'token:use', token.containers) !== 'reveal') continue;
        toDestination.add(token.secret);
        toCaller.add(token.secret);
        mustReach.push(token.secret);
      }
    }
    const appReveals = probeToken !== null && app !== null && modelTransform(app, 'token:read', probeToken.containers) === 'reveal';
    if (appReveals && request.includes('code')) {
      toDestination.add(probeToken.secret);
      toCaller.add(probeToken.secret);
      mustReach.push(probeToken.secret);
    }
    if (appReveals && response.includes('code') && transformed) toCaller.add(probeToken.secret);
    if (request.includes('tokenize')) toDestination.delete(card);
    outcome = await call(shared, s.via, actor, { key, headers, body });
    // Audited (docs/proxies.md, Audit): every call of a current key; an application's call with a
    // key that opens nothing, in its own tenant; never an anonymous call with such a key.
    expected = { sent, audited: valid || actor !== null ? 1 : 0, ok };
    if (sent && !ok) createdBeforeFailing = request.includes('tokenize') ? 1 : 0;
    const receipt = shared.destination.received.at(-1);
    if (sent && receipt) {
      if (!transformed || !(response.includes('tokenize') || response.includes('mask'))) toCaller.add(receipt.issued);
      shared.secrets.add(receipt.issued);
    }
    if (outcome.ok && ok) await checkKeyedAnswer(world, proxy, actor, outcome, receipt!, { named, probeToken, app, card, transformed, requestContainer, responseContainer, label });
  }

  const tag = `${s.kind}${'via' in s ? `/${s.via}` : ''}:${outcome.ok ? 'ok' : 'refused'}`;
  tally.set(tag, (tally.get(tag) ?? 0) + 1);
  // Every call: succeeded exactly when entitled; nothing sent when refused before sending.
  expect(outcome.ok, `${label}: ${outcome.ok ? 'succeeded' : `refused (${outcome.text.slice(0, 200)})`}`).toBe(expected.ok);
  expect(shared.destination.received.length - sentBefore, `${label}: requests the destination received`).toBe(expected.sent ? 1 : 0);
  const receipt = expected.sent ? shared.destination.received.at(-1)! : null;
  if (receipt) {
    const { authorization, ...otherHeaders } = receipt.headers;
    checkShown(shared, `${label}: the destination's request`, receipt.body + JSON.stringify(otherHeaders) + receipt.url, toDestination);
    if (authorization !== undefined) checkShown(shared, `${label}: the destination's authorization`, authorization.replace(/^Bearer config-secret-\S+$/, ''), toDestination);
    for (const secret of mustReach) expect(receipt.body + JSON.stringify(otherHeaders), `${label}: the destination receives a value it is entitled to`).toContain(secret);
  }
  checkShown(shared, `${label}: the caller's answer`, outcome.text, toCaller);
  // Logs and audit: never a token's plaintext, a key or a configuration value.
  checkShown(shared, `${label}: the log`, shared.logged.slice(logsBefore).join('\n'), new Set());
  const after = await auditEntries(world);
  checkShown(shared, `${label}: the audit log`, after.text, new Set());
  expect(after.count - audit.count, `${label}: proxy:invoke audit entries`).toBe(expected.audited);
  if (expected.audited === 1) {
    const entry = after.last!;
    expect(entry['outcome'], `${label}: audited outcome`).toBe(outcome.ok ? 'success' : 'failure');
    const detail = JSON.parse(entry['detail'] as string) as Record<string, unknown>;
    // A key that opens nothing names no proxy: its entry holds only what the caller sent and the refusal.
    const opensNothing = s.kind === 'keyed' && s.key !== 'current';
    const fields = opensNothing ? [...INVALID_KEY_AUDIT_FIELDS] : [...AUDIT_FIELDS, ...(s.kind === 'keyed' ? KEYED_AUDIT_FIELDS : []), ...(outcome.ok ? [] : ['error'])];
    if (opensNothing)
      expect([entry['resource_id'], detail['proxy_id'], detail['error']], `${label}: a key that opens nothing, audited`).toEqual([null, null, 'authentication_error']);
    expect(Object.keys(detail).sort(), `${label}: audit detail fields`).toEqual(fields.sort());
    // Query parameter names, never their values; the actor is the caller, or the proxy for an anonymous call.
    if (typeof detail['path'] === 'string') expect(detail['query_keys'], `${label}: audited query`).toEqual(['a']);
    const keyedProxy = s.kind === 'keyed' ? proxies[s.proxy % proxies.length]! : null;
    const who =
      s.kind === 'ephemeral' ? world.actors[s.actor % world.actors.length]! : s.kind === 'keyed' && s.actor !== null ? world.actors[s.actor % world.actors.length]! : null;
    expect(entry['actor'], `${label}: audited actor`).toBe(who?.model.id ?? `proxy:${keyedProxy!.id}`);
    // A refused call still names the tokens its transforms made before it failed (docs/proxies.md, Audit).
    if (createdBeforeFailing !== null) expect((detail['created_token_ids'] as string[]).length, `${label}: audited tokens made before failing`).toBe(createdBeforeFailing);
  }
}

interface KeyedContext {
  named: { token: PToken; whole: boolean }[];
  probeToken: PToken | null;
  app: ModelApp | null;
  card: string;
  transformed: boolean;
  requestContainer: string;
  responseContainer: string;
  label: string;
}

/** A keyed call that succeeded: what the destination got and the caller sees, and the tokens its transforms made. */
async function checkKeyedAnswer(
  world: World,
  proxy: PProxy,
  actor: Principal | null,
  outcome: Outcome,
  receipt: { body: string; headers: Record<string, string>; issued: string },
  c: KeyedContext,
): Promise<void> {
  const { request, response } = proxy.spec;
  const sent = JSON.parse(receipt.body) as { refs: unknown[]; card: unknown; probed?: unknown; smuggled?: unknown };
  // An anonymous call's expressions are forwarded as written, never evaluated.
  if (actor === null) for (const { token } of c.named) expect(receipt.body, `${c.label}: an anonymous expression arrives as written`).toContain(`{{ ${token.id}`);
  if (request.includes('code')) {
    const probed = c.probeToken === null ? null : c.app === null ? 'no-bt' : modelTransform(c.app, 'token:read', c.probeToken.containers) === null ? 'denied' : 'data';
    if (probed === 'data') expect([null, 'no-bt', 'denied'].includes(sent.probed as never), `${c.label}: req.bt reads as the application`).toBe(false);
    else expect(sent.probed, `${c.label}: req.bt reads as the application`).toBe(probed);
    expect(sent.smuggled, `${c.label}: an expression a transform wrote arrives as written`).toBe(c.probeToken === null ? null : `{{ ${c.probeToken.id} }}`);
    expect(receipt.headers['authorization'], `${c.label}: the configuration reaches the destination`).toBe(proxy.config === null ? undefined : `Bearer ${proxy.config}`);
  }
  const created: { id: string; containers: string[]; secret: string | null }[] = [];
  if (request.includes('tokenize')) {
    expect(typeof sent.card, `${c.label}: the destination receives a token id for the card`).toBe('string');
    created.push({ id: sent.card as string, containers: [c.requestContainer], secret: c.card });
  }
  const answer = JSON.parse(outcome.body) as Record<string, unknown>;
  if (!c.transformed) {
    // No response transform ran (none, or an error answer): the destination's answer as it sent it.
    expect([answer['issued'], answer['meta'], answer['response_probed'], outcome.headers['x-appended']], `${c.label}: an untransformed answer`).toEqual([
      receipt.issued,
      undefined,
      undefined,
      undefined,
    ]);
  } else {
    if (response.includes('append_header')) expect(outcome.headers['x-appended'], `${c.label}: append_header`).toBe('yes');
    if (response.includes('append_json')) expect(answer['meta'], `${c.label}: append_json`).toEqual({ via: 'vault' });
    if (response.includes('tokenize')) {
      expect(typeof answer['issued_token'], `${c.label}: a response tokenize answers the id`).toBe('string');
      const masked = response.indexOf('mask') !== -1 && response.indexOf('mask') < response.indexOf('tokenize');
      created.push({ id: answer['issued_token'] as string, containers: [c.responseContainer], secret: masked ? null : receipt.issued });
    }
  }
  // Tokens the transforms made: the proxy tenant's, read per each caller's token:read rules, never by another tenant.
  const { vault } = world.shared;
  for (const token of created) {
    const own = await vault.tokens.get(world.owner.caller, token.id);
    expect(own.containers, `${c.label}: a created token's containers`).toEqual(token.containers);
    if (token.secret !== null) expect(JSON.stringify(own.data), `${c.label}: a created token's data`).toContain(token.secret);
    await expect(vault.tokens.get(world.shared.foreign.reader.caller, token.id), `${c.label}: another tenant reads a created token`).rejects.toBeInstanceOf(VaultError);
    const readers = [...(actor ? [actor] : []), ...world.bound];
    for (const reader of readers) {
      const read = modelTransform(reader.model, 'token:read', token.containers);
      const got = await vault.tokens.get(reader.caller, token.id).then(
        (view) => JSON.stringify(view),
        (error: unknown) => {
          if (!(error instanceof VaultError)) throw error;
          return null;
        },
      );
      expect(got !== null, `${c.label}: a created token read by ${JSON.stringify(reader.model.rules)}`).toBe(read !== null);
      if (got !== null && read !== 'reveal' && token.secret !== null) expect(got.includes(token.secret), `${c.label}: a created token shown beyond ${read}`).toBe(false);
    }
    if (token.secret !== null) world.tokens.push({ id: token.id, containers: token.containers, secret: token.secret, card: token.secret === c.card });
  }
  const entry = (await auditEntries(world)).last!;
  const detail = JSON.parse(entry['detail'] as string) as { created_token_ids: string[]; token_ids: string[]; authenticated: boolean; proxy_id: string };
  expect(detail.created_token_ids.sort(), `${c.label}: audited created tokens`).toEqual(created.map((t) => t.id).sort());
  expect([detail.proxy_id, detail.authenticated], `${c.label}: audited proxy and authentication`).toEqual([proxy.id, actor !== null]);
  if (actor !== null) expect(detail.token_ids.sort(), `${c.label}: audited token ids`).toEqual([...new Set(c.named.map((x) => x.token.id))].sort());
}
