/**
 * The filters of the v2 routes against the reference model (reference-model.ts), combined:
 * GET /v2/tokens with `container` and `fingerprint` (paged by cursor, one token a page), and
 * POST /v2/tokens/search with `fingerprint:`, by applications with random rules, before and after
 * a change of their grants (a cursor issued before the change pages on under the grants after it)
 * and a data key rotation; and, beside them, GET /applications/key and GET /logs with entity
 * filters, across two tenants (docs/authority.md, Routes that read).
 *
 * The property: a fingerprint filter or term matches exactly the tokens of that fingerprint the
 * caller may reveal (a masked reader matches nothing); without one, exactly the tokens the grants
 * show; a page never shows a fingerprint of a token the caller cannot reveal; another tenant's
 * callers match nothing of this tenant by fingerprint or by log entity; /applications/key names
 * the caller's own application.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import type { TokenView } from '../../src/tokens/token-view.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { type ModelApp, TOKEN_CONTAINERS, TOKEN_PERMISSIONS, modelTransform, rulesOf } from './reference-model.js';

const FUZZ_RUNS = Number(process.env.TOKENVAULT_FUZZ_RUNS ?? 0);
const READS: Permission[] = ['token:read', 'token:search'];
const NUMBERS = ['4242424242424242', '4000056655665556', '5555555555554444'];
const OWNER_RULES: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: [...TOKEN_PERMISSIONS] }];

const appSpec = fc.record({ permissions: fc.subarray(READS, { minLength: 1 }), rules: rulesOf(READS) });
const tokenSpec = fc.record({ number: fc.nat({ max: NUMBERS.length - 1 }), container: fc.nat({ max: TOKEN_CONTAINERS.length - 1 }) });

interface Actor {
  caller: Caller;
  key: string;
  model: ModelApp;
}

/** Every page of a list or search, one token a page, following the cursor; `between` runs after the first page. */
async function allPages(fetch: (start?: string) => Promise<{ data: TokenView[]; pagination: unknown }>, between?: () => Promise<void>): Promise<TokenView[]> {
  const seen: TokenView[] = [];
  let start: string | undefined;
  for (let first = true; ; first = false) {
    const page = await fetch(start);
    seen.push(...page.data);
    if (first && between) await between();
    const next = (page.pagination as { next?: string | null }).next;
    if (!next) return seen;
    start = next;
  }
}

const ids = (views: { id: string }[]) => views.map((v) => v.id).sort();

describeEachStore('v2 filters, /applications/key and log entity filters follow the reference model (property)', (store) => {
  const runs = FUZZ_RUNS > 0 ? FUZZ_RUNS : store.name === 'sqlite' ? 12 : 4;
  it(`holds over ${runs} random tenants`, { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(appSpec, { minLength: 1, maxLength: 3 }),
        fc.array(tokenSpec, { minLength: 2, maxLength: 6 }),
        fc.nat(),
        fc.nat(),
        fc.boolean(),
        async (specs, tokens, pick, regrantWhich, rotate) => {
          const vault: TestVault = await store.vault();
          const admin = await vault.authenticate(vault.adminKey);
          const owner = await vault.caller({ type: 'private', permissions: [...TOKEN_PERMISSIONS], rules: OWNER_RULES });
          const actors: Actor[] = [];
          for (const spec of specs) {
            const caller = await vault.caller({ type: 'private', permissions: spec.permissions, rules: spec.rules });
            actors.push({ caller, key: caller.key, model: { id: caller.applicationId, type: 'private', permissions: [...caller.permissions], rules: spec.rules } });
          }
          // The same number in several containers: one fingerprint, tokens of differing visibility.
          const made: { id: string; containers: string[]; fingerprint: string }[] = [];
          for (const t of tokens) {
            const view = await vault.tokens.create(owner, { type: 'card', data: { number: NUMBERS[t.number]! }, containers: [TOKEN_CONTAINERS[t.container]!] });
            made.push({ id: view.id, containers: view.containers ?? [], fingerprint: String(view.fingerprint) });
          }
          const fingerprint = made[pick % made.length]!.fingerprint;
          const container = TOKEN_CONTAINERS[pick % TOKEN_CONTAINERS.length]!;

          // Another tenant, revealing everything there: it knows the number, not this tenant's fingerprints.
          const other = await vault.createTenant({ name: 'other' });
          const otherAdmin = await vault.authenticate(other.application.key);
          const stranger = await vault.authenticate(
            (await vault.applications.create(otherAdmin, { name: 's', type: 'private', permissions: [...TOKEN_PERMISSIONS], rules: OWNER_RULES })).key!,
          );
          const own = await vault.tokens.create(stranger, { type: 'card', data: { number: NUMBERS[0]! }, containers: ['/pci/high/'] });

          const check = async (actor: Actor, label: string, between?: () => Promise<void>) => {
            const { caller, model } = actor;
            const reveals = (p: Permission, t: (typeof made)[number]) => modelTransform(model, p, t.containers) === 'reveal';
            const mayRead = model.permissions.includes('token:read');
            const mustNotShowFingerprints = (views: TokenView[]) => {
              for (const view of views) {
                const token = made.find((t) => t.id === view.id)!;
                if (view.fingerprint !== undefined) expect(reveals('token:read', token), `${label}: fingerprint of ${view.id} shown without reveal`).toBe(true);
              }
            };
            if (mayRead) {
              const byFingerprint = await allPages((start) => vault.tokens.list(caller, { fingerprint, size: 1, ...(start ? { start } : {}) }), between);
              expect(ids(byFingerprint), `${label}: fingerprint filter`).toEqual(ids(made.filter((t) => t.fingerprint === fingerprint && reveals('token:read', t))));
              mustNotShowFingerprints(byFingerprint);
              const both = await vault.tokens.list(caller, { fingerprint, container, size: 100 });
              expect(ids(both.data), `${label}: fingerprint and container`).toEqual(
                ids(made.filter((t) => t.fingerprint === fingerprint && t.containers.includes(container) && reveals('token:read', t))),
              );
              const inContainer = await vault.tokens.list(caller, { container, size: 100 });
              expect(ids(inContainer.data), `${label}: container filter`).toEqual(
                ids(made.filter((t) => t.containers.includes(container) && modelTransform(model, 'token:read', t.containers) !== null)),
              );
              mustNotShowFingerprints(inContainer.data);
            }
            if (model.permissions.includes('token:search')) {
              const searched = await allPages((start) => vault.tokens.search(caller, { query: `fingerprint:${fingerprint}`, size: 1, ...(start ? { start } : {}) }));
              expect(ids(searched), `${label}: fingerprint: search`).toEqual(ids(made.filter((t) => t.fingerprint === fingerprint && reveals('token:search', t))));
              mustNotShowFingerprints(searched);
            }
            const self = await vault.applications.getByKey(caller);
            expect(self.id, `${label}: /applications/key`).toBe(model.id);
            expect(JSON.stringify(self), `${label}: /applications/key shows no key`).not.toContain(actor.key);
          };

          for (const [i, actor] of actors.entries()) await check(actor, `app ${i}`);
          // A grant change halfway through a paging: the pages after it follow the grants after it.
          const changed = actors[regrantWhich % actors.length]!;
          const next: AccessRule[] = [{ priority: 0, container: TOKEN_CONTAINERS[regrantWhich % TOKEN_CONTAINERS.length]!, transform: 'reveal', permissions: [...READS] }];
          await check(changed, 'regranted mid-paging', async () => {
            await vault.applications.update(admin, changed.model.id, { name: 'changed', permissions: [...READS], rules: next });
            changed.caller = await vault.authenticate(changed.key);
            changed.model = { ...changed.model, permissions: [...READS], rules: next };
          });
          await check(changed, 'regranted');
          if (rotate) {
            await vault.operator.keys.rotate(vault.tenantId);
            for (const [i, actor] of actors.entries()) await check(actor, `app ${i} after a key rotation`);
          }

          // The other tenant: nothing of this tenant by fingerprint, search or log entity; its own token still.
          expect((await vault.tokens.list(stranger, { fingerprint, size: 100 })).data, 'another tenant by fingerprint').toEqual([]);
          expect((await vault.tokens.search(stranger, { query: `fingerprint:${fingerprint}`, size: 100 })).data, 'another tenant by fingerprint: search').toEqual([]);
          expect(ids((await vault.tokens.list(stranger, { size: 100 })).data)).toEqual([own.id]);
          const victim = made[pick % made.length]!.id;
          expect((await vault.logs.list(otherAdmin, { entity_id: victim, size: 100 })).data, "another tenant's logs of this token").toEqual([]);
          expect(
            (await vault.logs.list(otherAdmin, { entity_type: 'token', size: 100 })).data.map((e) => (e as { tenant_id?: string }).tenant_id ?? other.tenant.id),
          ).not.toContain(vault.tenantId);
          const mine = await vault.logs.list(admin, { entity_id: victim, size: 100 });
          expect(mine.data.length, "this tenant's logs of its token").toBeGreaterThan(0);
          expect(JSON.stringify((await vault.logs.list(otherAdmin, { entity_type: 'token', size: 100 })).data), "another tenant's token logs").not.toContain(victim);
        },
      ),
      { numRuns: runs, ...(FUZZ_RUNS > 0 ? {} : { seed: 20261202 }) },
    );
  });
});
