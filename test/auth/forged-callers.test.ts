import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { ManualClock } from '../../src/common/clock.js';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { AuthorizationError } from '../../src/errors/errors.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import { makeCaller as makeTestCaller } from '../../src/testing/index.js';
import { createVault, type Vault } from '../../src/vault.js';
import { describeEachStore } from '../support/stores.js';
import { SUITE_START } from '../support/suite-start.js';

const TOKEN_ALL: Permission[] = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'];
/** The rules of a forger who wants everything: reveal on every container. */
const EVERYTHING: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: TOKEN_ALL }];

/** What each service holds for the victim tenant, read with its real Callers. */
async function state(vault: Vault, admin: Caller, reader: Caller) {
  const tokens = await vault.tokens.list(reader, { size: 100 });
  const applications = await vault.applications.list(admin);
  const webhooks = await vault.webhooks.list(admin);
  return { tokens: tokens.data.map((t) => [t.id, t.data, t.metadata]), applications: applications.data.map((a) => [a.id, a.permissions]), webhooks: webhooks.data.length };
}

describeEachStore('Callers the vault did not make', (store) => {
  let vault: Vault;
  let admin: Caller;
  let reader: Caller;
  let tokenId: string;
  /** Each a Caller for the victim tenant that no vault made, with every grant. */
  let forgeries: [string, Caller][];

  beforeAll(async () => {
    vault = await createVault({ store: store.factory()(), masterKey: generateMasterKey(), clock: new ManualClock(SUITE_START), jobs: { start: false }, sweepIntervalMs: 0 });
    const { tenant, application } = await vault.createTenant({ name: 'victim' });
    admin = await vault.authenticate(application.key);
    const app = await vault.applications.create(admin, { name: 'reader', type: 'private', permissions: ['token:create', 'token:read'], rules: [] });
    reader = await vault.authenticate(app.key);
    tokenId = (await vault.tokens.create(reader, { type: 'token', data: 'the secret' })).id;
    const everything = {
      permissions: new Set<Permission>([...TOKEN_ALL, 'application:create', 'application:read', 'application:update', 'webhook:read', 'log:read']),
      rules: EVERYTHING,
    };
    forgeries = [
      ['a plain object', { tenantId: tenant.id, applicationId: app.id, applicationType: 'private', ...everything } as unknown as Caller],
      ['a spread copy of a real Caller, widened', { ...reader, ...everything } as unknown as Caller],
      ['a frozen copy of a real Caller', Object.freeze({ ...admin })],
      ['an object inheriting from a real Caller', Object.create(reader) as Caller],
      ['a Proxy of a real Caller', new Proxy(reader, {})],
      ['a tokenvault/testing Caller', makeTestCaller({ tenantId: tenant.id, id: app.id, type: 'private', permissions: [...everything.permissions], rules: EVERYTHING })],
    ];
  });
  afterAll(() => vault.close());

  it('are refused by every operation of every service, and nothing changes', async () => {
    const before = await state(vault, admin, reader);
    const services = Object.entries(vault).filter(([name, value]) => typeof value === 'object' && value !== null && !['worker', 'clock', 'logger'].includes(name));
    let refused = 0;
    for (const [label, forged] of forgeries) {
      for (const [name, service] of services) {
        const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(service)).filter(
          (m) => m !== 'constructor' && typeof (service as Record<string, unknown>)[m] === 'function',
        );
        for (const method of methods) {
          // Arguments a real Caller could succeed with: the refusal must come before anything is read or written.
          const call = (service as Record<string, (...args: unknown[]) => Promise<unknown>>)[method]!(
            forged,
            tokenId,
            { type: 'token', data: 'x', name: 'n', url: 'https://example.com' },
            () => Promise.resolve(1),
          );
          const error = await call.then(
            () => null,
            (e: unknown) => e,
          );
          expect(error, `${name}.${method} with ${label}`).toBeInstanceOf(AuthorizationError);
          expect((error as Error).message).toContain('vault.authenticate(key)');
          refused++;
        }
      }
      const proxied = await vault.proxy(forged, { method: 'GET', url: 'https://example.com/', headers: {}, body: null } as never).then(
        () => null,
        (e: unknown) => e,
      );
      expect(proxied, `proxy with ${label}`).toBeInstanceOf(AuthorizationError);
    }
    // Every service and its operations were walked (a service added later is walked too).
    expect(services.map(([name]) => name)).toEqual(
      expect.arrayContaining([
        'tokens',
        'tokenIntents',
        'detokenizeSource',
        'formulas',
        'reactors',
        'applications',
        'applicationKeys',
        'sessions',
        'detokenize',
        'proxies',
        'permissions',
        'tenants',
        'logs',
        'webhooks',
        'idempotency',
      ]),
    );
    expect(refused).toBeGreaterThan(forgeries.length * 60);
    expect(await state(vault, admin, reader)).toEqual(before);
  });

  it('the read and write operations named in the finding refuse a forged Caller; a real one still works', async () => {
    const [, forged] = forgeries[0]!;
    await expect(vault.tokens.list(forged)).rejects.toThrow(AuthorizationError);
    await expect(vault.tokens.get(forged, tokenId)).rejects.toThrow(/obtain a Caller from vault\.authenticate\(key\)/);
    await expect(vault.tokens.create(forged, { type: 'token', data: 'planted' })).rejects.toThrow(AuthorizationError);
    await expect(vault.detokenize.detokenize(forged, { v: `{{ ${tokenId} }}` })).rejects.toThrow(AuthorizationError);
    await expect(vault.applications.create(forged, { name: 'backdoor', type: 'management', permissions: ['application:create'], rules: [] })).rejects.toThrow(AuthorizationError);
    const [, testMade] = forgeries.at(-1)!;
    await expect(vault.tokens.list(testMade)).rejects.toThrow(/only a test vault accepts/);
    expect((await vault.tokens.get(reader, tokenId)).id).toBe(tokenId);
    expect((await vault.tokens.list(reader)).data.map((t) => t.id)).toEqual([tokenId]);
  });

  it('a real Caller cannot be widened: its permissions, rules and fields are fixed', () => {
    expect(() => (reader.permissions as Set<string>).add('token:use')).toThrow(TypeError);
    expect(() => (reader.permissions as Set<string>).clear()).toThrow(TypeError);
    expect(() => (reader.rules as unknown as unknown[]).push(EVERYTHING[0])).toThrow(TypeError);
    expect(() => (reader.rules[0]!.permissions as string[]).push('token:use')).toThrow(TypeError);
    expect(() => Object.assign(reader, { tenantId: 'other' })).toThrow(TypeError);
    expect([...reader.permissions].sort()).toEqual(['token:create', 'token:read']);
  });
});

describeEachStore('test Callers', (store) => {
  it('a test vault accepts the Callers of tokenvault/testing, a vault from createVault does not', async () => {
    const testVault = await store.vault();
    const own = await testVault.caller({ permissions: ['token:create', 'token:read'] });
    const made = makeTestCaller({ tenantId: testVault.tenantId, id: own.applicationId, type: 'private', permissions: ['token:create', 'token:read'], rules: [] });
    const token = await testVault.tokens.create(own, { type: 'token', data: 'x' });
    expect((await testVault.tokens.list(made)).data.map((t) => t.id)).toEqual([token.id]);
    // The same Callers copied are refused by the test vault too.
    await expect(testVault.tokens.list({ ...made })).rejects.toThrow(AuthorizationError);
  });
});
