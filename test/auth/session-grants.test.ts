import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Caller, coversGrants, grantScopes, transformFor } from '../../src/auth/caller.js';
import type { AccessRule, Permission, Transform } from '../../src/permissions/permissions.js';
import { intersectGrants, sessionCaller } from '../../src/auth/session-grants.js';
import type { ApplicationRecord, SessionRecord } from '../../src/storage/store.js';
import { CONTAINER_SETS, STRICTNESS, TOKEN_PERMISSIONS, UNIVERSE, app, grants } from './grant-universe.js';

/** The session Caller of `asked` grants authorized by an application holding `authorizer` grants. */
function session(asked: { permissions: Permission[]; rules: AccessRule[] }, authorizer: { permissions: Permission[]; rules: AccessRule[] }): Caller {
  const record: ApplicationRecord = {
    id: 'authorizer',
    tenantId: 't1',
    name: 'backend',
    type: 'private',
    ...authorizer,
    createdBy: null,
    createdAt: 0,
    modifiedBy: null,
    modifiedAt: null,
    credentialsGeneration: 0,
  };
  const pending: SessionRecord = {
    id: 's1',
    tenantId: 't1',
    applicationId: 'browser',
    keyHash: '',
    keyLookup: '',
    nonceHash: '',
    createdAt: 0,
    expiresAt: 1,
    authorizedBy: 'authorizer',
    authorizedAt: 0,
    grants: asked,
    creatorGeneration: 0,
    authorizerGeneration: 0,
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
    const authorizer = {
      permissions: ['token:read', 'token:use'] as Permission[],
      rules: [{ priority: 0, container: '/pci/', transform: 'mask' as const, permissions: ['token:read'] as Permission[] }],
    };
    const s = session(
      { permissions: ['token:read', 'token:use'], rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:read', 'token:use'] }] },
      authorizer,
    );
    expect(transformFor(s, 'token:read', ['/pci/high/'])).toBe('mask');
    expect(transformFor(s, 'token:read', ['/bank/high/'])).toBeNull();
    expect(transformFor(s, 'token:use', ['/pci/high/'])).toBeNull();
    expect(s.applicationId).toBe('s1');
    expect(s.session).toEqual({ id: 's1', createdBy: 'browser', authorizedBy: 'authorizer', expiresAt: 1 });
  });

  it('examples: an authorizer without rules (implicit mask on /, use reveal) bounds a revealing session to mask', () => {
    const s = session(
      { permissions: ['token:read'], rules: [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }] },
      { permissions: ['token:read'], rules: [] },
    );
    expect(transformFor(s, 'token:read', ['/pci/high/'])).toBe('mask');
    expect(transformFor(s, 'token:read', ['/general/'])).toBeNull();
    // Reduced authorizer: the session loses what the authorizer lost.
    expect(transformFor(session({ permissions: ['token:read'], rules: [] }, { permissions: [], rules: [] }), 'token:read', ['/'])).toBeNull();
  });
});
