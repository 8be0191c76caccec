import { describe, expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { callerMaker, deriveCaller, mintCaller } from '../../src/auth/caller-brand.js';

const fields = { tenantId: 't-1', applicationId: 'a-1', applicationType: 'private' as const, permissions: ['token:read' as const], rules: [] };

describe('deriveCaller', () => {
  it('keeps the maker of a minted Caller', () => {
    expect(callerMaker(deriveCaller(mintCaller(fields, 'vault'), { permissions: [] }))).toBe('vault');
    expect(callerMaker(deriveCaller(mintCaller(fields, 'test'), { permissions: [] }))).toBe('test');
  });

  it('refuses a source the vault did not mint: a copy never becomes a Caller, not even a test one', () => {
    const copy = { ...mintCaller(fields, 'vault') } as Caller;
    expect(() => deriveCaller(copy, { permissions: [] })).toThrow(/not made by the vault/);
  });
});
