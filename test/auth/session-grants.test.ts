import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Caller, coversGrants, grantScopes, makeCaller, transformFor } from '../../src/auth/caller.js';
import { type AccessRule, PERMISSIONS_BY_TYPE, type Permission, type Transform } from '../../src/permissions/permissions.js';
import { intersectGrants, sessionCaller } from '../../src/auth/session-grants.js';
import type { ApplicationRecord, SessionRecord } from '../../src/storage/store.js';

const TOKEN_PERMISSIONS: Permission[] = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'];
const STRICTNESS: Record<Transform, number> = { reveal: 0, mask: 1, redact: 2 };

const app = (id: string, permissions: Permission[], rules: AccessRule[] = []) => makeCaller({ tenantId: 't1', id, type: 'private', permissions, rules });

/** Every container path of depth 0 to 3 over the segments a and b: deeper than any generated rule. */
const UNIVERSE: string[] = (() => {
  const paths = ['/'];
  for (let depth = 0; depth < 3; depth++) {
    for (const path of paths.filter((p) => p.split('/').length - 2 === depth)) paths.push(`${path}a/`, `${path}b/`);
  }
  return paths;
})();
const CONTAINER_SETS: string[][] = [...UNIVERSE.map((c) => [c]), ...UNIVERSE.flatMap((c, i) => UNIVERSE.slice(i + 1).map((d) => [c, d]))];

const container = fc.array(fc.constantFrom('a', 'b'), { maxLength: 2 }).map((segments) => (segments.length === 0 ? '/' : `/${segments.join('/')}/`));
const rule: fc.Arbitrary<AccessRule> = fc.record({
  priority: fc.integer({ min: 0, max: 3 }),
  container,
  transform: fc.constantFrom<Transform>('reveal', 'mask', 'redact'),
  permissions: fc.subarray(TOKEN_PERMISSIONS, { minLength: 1 }),
});
const grants = fc.record({
  permissions: fc.subarray([...PERMISSIONS_BY_TYPE.private]),
  rules: fc.oneof(fc.constant<AccessRule[]>([]), fc.array(rule, { maxLength: 5 })),
});

/** The session Caller of `asked` grants authorized by an application holding `authorizer` grants. */
function session(asked: { permissions: Permission[]; rules: AccessRule[] }, authorizer: { permissions: Permission[]; rules: AccessRule[] }): Caller {
  const record: ApplicationRecord = {
    id: 'authorizer', tenantId: 't1', name: 'backend', type: 'private', ...authorizer, createdBy: null, createdAt: 0, modifiedBy: null, modifiedAt: null, credentialsGeneration: 0,
  };
  const pending: SessionRecord = {
    id: 's1', tenantId: 't1', applicationId: 'browser', keyHash: '', keyLookup: '', nonceHash: '', createdAt: 0, expiresAt: 1,
    authorizedBy: 'authorizer', authorizedAt: 0, grants: asked, creatorGeneration: 0, authorizerGeneration: 0,
  };
  return sessionCaller({ ...pending, authorizedBy: 'authorizer', grants: asked }, record);
}

const stricter = (a: Transform | null, b: Transform | null): Transform | null => (a === null || b === null ? null : STRICTNESS[a] >= STRICTNESS[b] ? a : b);

describe('session grants: the intersection of the session’s grants and its authorizer’s', () => {
  it('never exceeds the authorizer, for any authorizer and any grants asked for (property)', () => {
    fc.assert(
      fc.property(grants, grants, (authorizer, asked) => {
        const s = session(asked, authorizer);
        const a = app('authorizer', authorizer.permissions, authorizer.rules);
        expect(coversGrants(a, s)).toBe(true);
        for (const permission of s.permissions) expect(a.permissions.has(permission)).toBe(true);
        const exceeding: string[] = [];
        for (const permission of TOKEN_PERMISSIONS) {
          for (const containers of CONTAINER_SETS) {
            const held = transformFor(s, permission, containers);
            const limit = transformFor(a, permission, containers);
            if (held !== null && (limit === null || STRICTNESS[held] < STRICTNESS[limit])) exceeding.push(`${permission} ${containers.join(',')}`);
          }
        }
        expect(exceeding).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });

  it('is exact: on every container set, the stricter of the two transforms, nothing where either grants nothing (property)', () => {
    fc.assert(
      fc.property(grants, grants, (x, y) => {
        const a = app('a', x.permissions, x.rules);
        const b = app('b', y.permissions, y.rules);
        const both = intersectGrants(a, b);
        const c = Object.freeze({ ...a, permissions: new Set(both.permissions), rules: both.rules });
        const wrong: string[] = [];
        for (const permission of TOKEN_PERMISSIONS) {
          for (const containers of CONTAINER_SETS) {
            const expected = stricter(transformFor(a, permission, containers), transformFor(b, permission, containers));
            if (transformFor(c, permission, containers) !== expected) wrong.push(`${permission} ${containers.join(',')}`);
          }
          // The store's scopes agree with the rules of the result, as for any Caller.
          const scopes = grantScopes(c, permission, false);
          for (const path of UNIVERSE) {
            const inScope = scopes.some((s) => path.startsWith(s.prefix) && !s.except.some((e) => path.startsWith(e)));
            if (inScope !== (transformFor(c, permission, [path]) !== null)) wrong.push(`scope ${permission} ${path}`);
          }
        }
        expect(wrong).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });

  it('examples: rules on broader containers than the authorizer’s grant nothing beyond them', () => {
    const authorizer = { permissions: ['token:read', 'token:use'] as Permission[], rules: [{ priority: 0, container: '/pci/', transform: 'mask' as const, permissions: ['token:read'] as Permission[] }] };
    const s = session({ permissions: ['token:read', 'token:use'], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:read', 'token:use'] }] }, authorizer);
    expect(transformFor(s, 'token:read', ['/pci/high/'])).toBe('mask');
    expect(transformFor(s, 'token:read', ['/bank/high/'])).toBeNull();
    expect(transformFor(s, 'token:use', ['/pci/high/'])).toBeNull();
    expect(s.applicationId).toBe('s1');
    expect(s.session).toEqual({ id: 's1', createdBy: 'browser', authorizedBy: 'authorizer', expiresAt: 1 });
  });

  it('examples: an authorizer without rules (implicit mask on /, use reveal) bounds a revealing session to mask', () => {
    const s = session({ permissions: ['token:read'], rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }] }, { permissions: ['token:read'], rules: [] });
    expect(transformFor(s, 'token:read', ['/pci/high/'])).toBe('mask');
    expect(transformFor(s, 'token:read', ['/general/'])).toBeNull();
    // Reduced authorizer: the session loses what the authorizer lost.
    expect(transformFor(session({ permissions: ['token:read'], rules: [] }, { permissions: [], rules: [] }), 'token:read', ['/'])).toBeNull();
  });
});
