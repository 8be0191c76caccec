import { createTestVault, type TestVault } from '../../src/testing/index.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import type { TestStore } from './stores.js';
import { SUITE_START } from './suite-start.js';

export const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' };
export const BANK = { routing_number: '021000021', account_number: '000123456789' };

export const REVEAL_ALL: AccessRule[] = [
  { priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'] },
];

export const ALL_TOKEN_PERMISSIONS: Permission[] = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'];

/** A vault with a revealing and a masking caller; on `store` (closed after the test) when given, else SQLite. */
export async function setup(
  store?: TestStore,
): Promise<{ vault: TestVault; revealer: Awaited<ReturnType<TestVault['caller']>>; masker: Awaited<ReturnType<TestVault['caller']>> }> {
  const vault = store ? await store.vault() : await createTestVault({ start: SUITE_START });
  const revealer = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL, name: 'revealer' });
  const masker = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, name: 'masker' });
  return { vault, revealer, masker };
}

/** Every live token of the tenant, revealed (to compare store states before and after a rejected call). */
export async function snapshot(vault: TestVault, caller: Awaited<ReturnType<TestVault['caller']>>): Promise<unknown[]> {
  const out: unknown[] = [];
  let start: string | undefined;
  for (;;) {
    const page = await vault.tokens.list(caller, { size: 100, ...(start ? { start } : {}) });
    out.push(...page.data);
    const next = (page.pagination as { next: string | null }).next;
    if (!next) return out;
    start = next;
  }
}
