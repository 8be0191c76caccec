/**
 * Token intents join the no-leak property (no-leak.property.test.ts, docs/token-intents.md): no
 * sequence of intent operations lets a caller learn an intent's data beyond what its grants allow,
 * and each operation succeeds exactly when the reference model (reference-model.ts) entitles the
 * caller to it.
 *
 * fast-check draws public and private applications with random permissions (intent permissions
 * among them) and random access rules, and a sequence of: intent creations (a fresh card with its
 * cvc, or a fresh string), gets, deletes, conversions (`POST /tokens` with token_intent_id, into a
 * random container, with or without deduplicate_token, a token of the same data existing in
 * /pci/high/ or /general/high/), detokenizations naming the intent, tokens of the caller's own
 * data created under an intent's id or another id of the intents' form, and the same operations by
 * another tenant's application. After every step:
 * - no answer or error carries a secret (card number, cvc, string) its caller may not know: it made
 *   the intent; or converted it where its token:read transform is reveal; or detokenized it under
 *   a token:use transform of reveal on the container a token of the intent's type gets by default;
 * - an intent's fingerprint is shown only to a caller that may reveal that default container, and
 *   its card summary follows the caller's token:read transform there (reveal: all; mask: last4 and
 *   expiry; otherwise none), the creator's own answer showing all;
 * - get, delete, conversion and detokenization succeed exactly when the model says (permission,
 *   a live intent, container grants, reveal of token:read on the type's default container for any
 *   conversion and on the new token's containers for a deduplicating one), and once converted or
 *   deleted an intent is gone for every operation;
 * - no token can be created under an id of the intents' form, and a revealed detokenization of an
 *   intent carries the intent's own data (never a substitute);
 * - an application of another tenant (every token and intent permission, reveal everywhere) can
 *   neither get, delete, convert nor detokenize an intent, and its refusals show nothing of it.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { VaultError } from '../../src/errors/errors.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import { createTestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { type ModelApp, RULE_CONTAINERS, TOKEN_CONTAINERS, TOKEN_PERMISSIONS, rulesOf, luhn, modelTransform } from './reference-model.js';

const FUZZ_RUNS = Number(process.env.TOKENVAULT_FUZZ_RUNS ?? 0);
const INTENT: Permission[] = ['token-intent:create', 'token-intent:read', 'token-intent:delete'];
const PUBLIC: Permission[] = ['token:create', 'token:update', 'token-intent:create'];
const PRIVATE: Permission[] = [...TOKEN_PERMISSIONS, ...INTENT];
const DEFAULT_CONTAINER: Record<string, string> = { card: '/pci/high/', token: '/general/high/' };

const appSpec = fc.oneof(
  fc.record({ type: fc.constant('public' as const), permissions: fc.subarray(PUBLIC, { minLength: 1 }), rules: rulesOf(['token:create', 'token:update']) }),
  fc.record({ type: fc.constant('private' as const), permissions: fc.subarray(PRIVATE, { minLength: 1 }), rules: rulesOf(TOKEN_PERMISSIONS) }),
  // Split grants, which random rules seldom make: creation reveals on a subtree, every other use masks
  // (a conversion answered under the create transform, or a masked use shown revealed, would leak).
  fc.record({
    type: fc.constant('private' as const),
    permissions: fc.constant(PRIVATE),
    rules: fc.constantFrom(...RULE_CONTAINERS).map((container): AccessRule[] => [
      { priority: 0, container, transform: 'reveal', permissions: ['token:create'] },
      { priority: 1, container: '/', transform: 'mask', permissions: [...TOKEN_PERMISSIONS] },
    ]),
  }),
);
const n = fc.nat(20);
const op = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('create' as const), actor: n, card: fc.boolean(), twin: fc.boolean() }), weight: 2 },
  fc.record({ kind: fc.constant('get' as const), actor: n, target: n }),
  fc.record({ kind: fc.constant('delete' as const), actor: n, target: n }),
  { arbitrary: fc.record({ kind: fc.constant('convert' as const), actor: n, target: n, container: n, dedupe: fc.boolean() }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('use' as const), actor: n, target: n }), weight: 2 },
  fc.record({ kind: fc.constant('squat' as const), actor: n, target: n, container: n, form: fc.constantFrom('same', 'prefix', 'upper') }),
  // An application of another tenant, holding every token and intent permission with reveal everywhere.
  fc.record({ kind: fc.constant('foreign' as const), actor: n, target: n, how: fc.constantFrom('get', 'delete', 'convert', 'use') }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

interface Actor {
  caller: Caller;
  model: ModelApp;
}
interface ModelIntent {
  id: string;
  type: 'card' | 'token';
  secrets: string[];
  live: boolean;
}

let counter = 0;
/** 14 digits, unique in the process (fast-check's draws decide everything else). */
const fresh = () => String(++counter).padStart(14, '0');

/** Runs `fn`; its answer, or the VaultError it threw (anything else fails the test). */
async function attempt(fn: () => Promise<unknown>): Promise<{ ok: true; value: unknown } | { ok: false; error: VaultError }> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    if (!(error instanceof VaultError)) throw error;
    return { ok: false, error };
  }
}

describeEachStore('token intents: no caller learns more than its grants allow (property)', (store) => {
  const runs = FUZZ_RUNS > 0 ? FUZZ_RUNS : store.name === 'sqlite' ? 60 : 20;
  it(`holds over ${runs} random sequences of intent operations`, { timeout: 600_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(appSpec, { minLength: 2, maxLength: 4 }), fc.array(op, { minLength: 4, maxLength: 16 }), async (specs, ops) => {
        const made = store.create();
        const vault = await createTestVault({ store: made });
        try {
          const owner = await vault.caller({
            permissions: [...TOKEN_PERMISSIONS],
            rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: [...TOKEN_PERMISSIONS] }],
          });
          const actors: Actor[] = [];
          for (const [i, spec] of specs.entries()) {
            const caller = await vault.caller({ name: `app ${i}`, type: spec.type, permissions: spec.permissions, rules: spec.rules });
            actors.push({
              caller,
              model: { id: caller.applicationId, type: spec.type, permissions: [...caller.permissions], rules: spec.rules.map((r: AccessRule) => ({ ...r })) },
            });
          }
          let foreign: Caller | undefined;
          const intents: ModelIntent[] = [];
          const known = new Map<string, Set<string>>(actors.map((a) => [a.model.id, new Set<string>()]));
          const allSecrets = new Set<string>();
          for (const o of ops) {
            const actor = actors[o.actor % actors.length]!;
            // Another tenant's application may know nothing of this tenant's intents.
            const mayKnow = o.kind === 'foreign' ? new Set<string>() : known.get(actor.model.id)!;
            const has = (p: Permission) => actor.model.permissions.includes(p);
            const target = o.kind === 'create' ? undefined : intents[(o as Exclude<Op, { kind: 'create' }>).target % Math.max(1, intents.length)];
            let outcome: Awaited<ReturnType<typeof attempt>>;
            if (o.kind === 'create') {
              const card = o.card ? { number: luhn(`4${fresh()}`), expiration_month: 12, expiration_year: 2031, cvc: String(100 + (counter % 900)) } : null;
              const data = card ?? `S3CR3T-${fresh()}`;
              // The cvc as it would be shown (three digits alone turn up by chance).
              const secrets = card ? [card.number, `"cvc":"${card.cvc}"`] : [data as string];
              secrets.forEach((s) => allSecrets.add(s));
              const type = card ? ('card' as const) : ('token' as const);
              // A token of the same data, so that a deduplicating conversion has something to find.
              if (o.twin) await vault.tokens.create(owner, { type, data, containers: [DEFAULT_CONTAINER[type]!] });
              outcome = await attempt(() => vault.tokenIntents.create(actor.caller, { type, data }));
              expect(outcome.ok, 'create').toBe(has('token-intent:create'));
              if (outcome.ok) {
                // The creator sent the data: its answer shows the whole summary (and only for cards).
                expect((outcome.value as { card?: { bin?: string } }).card?.bin, 'creator summary').toBe(card ? card.number.slice(0, 6) : undefined);
                intents.push({ id: (outcome.value as { id: string }).id, type, secrets, live: true });
                secrets.forEach((s) => mayKnow.add(s));
              }
            } else if (target === undefined) {
              continue;
            } else if (o.kind === 'get') {
              outcome = await attempt(() => vault.tokenIntents.get(actor.caller, target.id));
              expect(outcome.ok, 'get').toBe(has('token-intent:read') && target.live);
              if (outcome.ok) {
                const read = modelTransform(actor.model, 'token:read', [DEFAULT_CONTAINER[target.type]!]);
                expect('fingerprint' in (outcome.value as object), 'fingerprint shown').toBe(read === 'reveal');
                // The summary as a token of this data in the default container shows it to this reader.
                const summary = (outcome.value as { card?: Record<string, unknown> }).card;
                const expected =
                  target.type !== 'card' || (read !== 'reveal' && read !== 'mask')
                    ? undefined
                    : read === 'reveal'
                      ? ['bin', 'brand', 'expiration_month', 'expiration_year', 'funding', 'last4']
                      : ['expiration_month', 'expiration_year', 'last4'];
                expect(summary && Object.keys(summary).sort(), `summary under ${read}`).toEqual(expected);
              }
            } else if (o.kind === 'delete') {
              outcome = await attempt(() => vault.tokenIntents.delete(actor.caller, target.id));
              expect(outcome.ok, 'delete').toBe(has('token-intent:delete') && target.live);
              if (outcome.ok) target.live = false;
            } else if (o.kind === 'convert') {
              const container = TOKEN_CONTAINERS[o.container % TOKEN_CONTAINERS.length]!;
              const read = modelTransform(actor.model, 'token:read', [container]);
              outcome = await attempt(() => vault.tokens.create(actor.caller, { token_intent_id: target.id, containers: [container], deduplicate_token: o.dedupe }));
              const home = modelTransform(actor.model, 'token:read', [DEFAULT_CONTAINER[target.type]!]);
              const entitled =
                has('token:create') && target.live && modelTransform(actor.model, 'token:create', [container]) !== null && home === 'reveal' && (!o.dedupe || read === 'reveal');
              expect(outcome.ok, `convert into ${container}`).toBe(entitled);
              if (outcome.ok) {
                target.live = false;
                if (read === 'reveal') target.secrets.forEach((s) => mayKnow.add(s));
              }
            } else if (o.kind === 'use') {
              const use = modelTransform(actor.model, 'token:use', [DEFAULT_CONTAINER[target.type]!]);
              outcome = await attempt(() => vault.detokenize.detokenize(actor.caller, { value: `{{ ${target.id} }}` }));
              expect(outcome.ok, 'detokenize').toBe(has('token:use') && target.live && use !== null);
              if (outcome.ok && use === 'reveal') {
                target.secrets.forEach((s) => mayKnow.add(s));
                // The intent's own data, not a token's that took its id.
                expect(JSON.stringify(outcome.value), 'detokenized intent').toContain(target.secrets[0]!);
              }
            } else if (o.kind === 'foreign') {
              if (!foreign) {
                const { application } = await vault.createTenant({ name: 'other' });
                const admin = await vault.authenticate(application.key);
                const rules: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: [...TOKEN_PERMISSIONS] }];
                foreign = await vault.authenticate((await vault.applications.create(admin, { name: 'other', type: 'private', permissions: PRIVATE, rules })).key!);
              }
              const other = foreign;
              const calls = {
                get: () => vault.tokenIntents.get(other, target.id),
                delete: () => vault.tokenIntents.delete(other, target.id),
                convert: () => vault.tokens.create(other, { token_intent_id: target.id }),
                use: () => vault.detokenize.detokenize(other, { value: `{{ ${target.id} }}` }),
              };
              outcome = await attempt(calls[o.how]);
              // Not there for another tenant: the intent stays as it was (later steps see it live).
              expect(outcome.ok, `another tenant's ${o.how}`).toBe(false);
            } else {
              // A token of the caller's own data under the intent's id (or another id of that form).
              const id = o.form === 'same' ? target.id : o.form === 'prefix' ? `intent_${fresh()}` : `INTENT_${fresh()}`;
              const container = TOKEN_CONTAINERS[o.container % TOKEN_CONTAINERS.length]!;
              const data = `SQUAT-${fresh()}`;
              mayKnow.add(data);
              outcome = await attempt(() => vault.tokens.create(actor.caller, { type: 'token', data, id, containers: [container] }));
              expect(outcome.ok, `token under intent id ${id}`).toBe(false);
            }
            const shown = outcome.ok ? (JSON.stringify(outcome.value) ?? '') : `${outcome.error.message} ${JSON.stringify((outcome.error as { errors?: unknown }).errors ?? {})}`;
            for (const secret of allSecrets) {
              if (!mayKnow.has(secret)) expect(shown.includes(secret), `${o.kind} by ${actor.model.type} shows a secret it may not know`).toBe(false);
            }
          }
        } finally {
          await vault.close();
          await store.cleanup(made);
        }
      }),
      { numRuns: runs, ...(FUZZ_RUNS > 0 ? {} : { seed: 20261127 }) },
    );
  });
});
