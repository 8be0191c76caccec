import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { grantScopes, makeCaller, transformFor } from '../../src/auth/caller.js';
import type { AccessRule, Permission, Transform } from '../../src/permissions/permissions.js';
import type { ContainerScope } from '../../src/storage/store.js';

/** What the stores compute from scopes (the SQL of both stores, written in TypeScript). */
function inScopes(scopes: readonly ContainerScope[], containers: readonly string[]): boolean {
  return containers.every((c) => scopes.some((s) => c.startsWith(s.prefix) && !s.except.some((x) => c.startsWith(x))));
}

const PATHS = ['/', '/a/', '/a/b/', '/a/b/c/', '/a/c/', '/b/', '/b/a/', '/ab/', '/a_/'];
const PERMISSIONS: Permission[] = ['token:read', 'token:search'];
const rule = fc.record({
  priority: fc.integer({ min: 0, max: 5 }),
  container: fc.constantFrom(...PATHS, '/A/', '/A/B/'),
  transform: fc.constantFrom<Transform>('reveal', 'mask', 'redact'),
  permissions: fc.subarray(PERMISSIONS, { minLength: 1 }),
});

describe('grantScopes', () => {
  it('agrees with transformFor on every token: granted iff in the scopes, reveal iff in the reveal scopes', () => {
    fc.assert(
      fc.property(
        fc.array(rule, { maxLength: 6 }),
        fc.subarray(PERMISSIONS),
        fc.array(fc.constantFrom(...PATHS), { minLength: 1, maxLength: 3 }),
        (rules: AccessRule[], held, containers) => {
          const caller = makeCaller({ tenantId: 't', id: 'a', type: 'private', permissions: held, rules });
          for (const permission of PERMISSIONS) {
            const transform = transformFor(caller, permission, containers);
            expect(inScopes(grantScopes(caller, permission, false), containers)).toBe(transform !== null);
            expect(inScopes(grantScopes(caller, permission, true), containers)).toBe(transform === 'reveal');
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('an earlier masking rule on a descendant carves it out of a revealing ancestor; an earlier masking ancestor shadows it', () => {
    const caller = makeCaller({
      tenantId: 't',
      id: 'a',
      type: 'private',
      permissions: ['token:search'],
      rules: [
        { priority: 0, container: '/a/x/', transform: 'mask', permissions: ['token:search'] },
        { priority: 1, container: '/a/', transform: 'reveal', permissions: ['token:search'] },
        { priority: 2, container: '/', transform: 'mask', permissions: ['token:search'] },
        { priority: 3, container: '/b/', transform: 'reveal', permissions: ['token:search'] },
      ],
    });
    expect(grantScopes(caller, 'token:search', true)).toEqual([{ prefix: '/a/', except: ['/a/x/'] }]);
    expect(grantScopes(caller, 'token:search', false).map((s) => s.prefix)).toEqual(['/a/x/', '/a/', '/', '/b/']);
    expect(grantScopes(caller, 'token:read', false)).toEqual([]);
  });
});
