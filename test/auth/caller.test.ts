import { describe, expect, it } from 'vitest';
import { makeCaller, requireTransform, transformFor } from '../../src/auth/caller.js';
import { AuthorizationError } from '../../src/errors/errors.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';

const app = (permissions: Permission[], rules: AccessRule[] = []) => makeCaller({ tenantId: 't1', id: 'a1', type: 'private', permissions, rules });

describe('access rules', () => {
  it('without rules, token permissions hold on / with mask, and token:use reveals', () => {
    const caller = app(['token:read', 'token:use', 'token:create']);
    expect(transformFor(caller, 'token:read', ['/pci/high/'])).toBe('mask');
    expect(transformFor(caller, 'token:create', ['/general/high/'])).toBe('mask');
    expect(transformFor(caller, 'token:use', ['/pci/high/'])).toBe('reveal');
    expect(transformFor(caller, 'token:delete', ['/pci/high/'])).toBeNull();
  });

  it('the first rule by priority whose container is the token container or an ancestor decides', () => {
    const caller = app(
      ['token:read'],
      [
        { priority: 2, container: '/', transform: 'mask', permissions: ['token:read'] },
        { priority: 1, container: '/pci/', transform: 'reveal', permissions: ['token:read'] },
        { priority: 0, container: '/bank/', transform: 'redact', permissions: ['token:read'] },
      ],
    );
    expect(transformFor(caller, 'token:read', ['/pci/high/'])).toBe('reveal');
    expect(transformFor(caller, 'token:read', ['/pci/'])).toBe('reveal');
    expect(transformFor(caller, 'token:read', ['/bank/low/'])).toBe('redact');
    expect(transformFor(caller, 'token:read', ['/general/high/'])).toBe('mask');
  });

  it('a rule on a sibling prefix is not an ancestor', () => {
    const caller = app(['token:read'], [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }]);
    expect(transformFor(caller, 'token:read', ['/pcix/high/'])).toBeNull();
  });

  it('a rule that does not list the permission does not decide it', () => {
    const caller = app(
      ['token:read', 'token:use'],
      [
        { priority: 0, container: '/', transform: 'reveal', permissions: ['token:use'] },
        { priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] },
      ],
    );
    expect(transformFor(caller, 'token:read', ['/a/'])).toBe('mask');
    expect(transformFor(caller, 'token:use', ['/a/'])).toBe('reveal');
  });

  it('a token in several containers needs a grant on each; the most restrictive transform wins', () => {
    const caller = app(
      ['token:read'],
      [
        { priority: 0, container: '/a/', transform: 'reveal', permissions: ['token:read'] },
        { priority: 1, container: '/b/', transform: 'mask', permissions: ['token:read'] },
        { priority: 2, container: '/c/', transform: 'redact', permissions: ['token:read'] },
      ],
    );
    expect(transformFor(caller, 'token:read', ['/a/', '/b/'])).toBe('mask');
    expect(transformFor(caller, 'token:read', ['/a/', '/b/', '/c/'])).toBe('redact');
    expect(transformFor(caller, 'token:read', ['/a/', '/d/'])).toBeNull();
  });

  it('rules cannot grant a permission the application does not hold', () => {
    const caller = app(['token:read'], [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:read', 'token:delete'] }]);
    expect(transformFor(caller, 'token:delete', ['/a/'])).toBeNull();
    expect(() => requireTransform(caller, 'token:delete', ['/a/'])).toThrow(AuthorizationError);
  });

  it('names the missing grant in the error', () => {
    const caller = app(['token:read'], [{ priority: 0, container: '/a/', transform: 'reveal', permissions: ['token:read'] }]);
    expect(() => requireTransform(caller, 'token:read', ['/b/'])).toThrow(/access rules do not grant 'token:read'/);
  });
});
