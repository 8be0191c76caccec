import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Caller, coversGrants, transformFor } from '../../src/auth/caller.js';
import type { AccessRule, Transform } from '../../src/permissions/permissions.js';
import { CONTAINER_SETS, STRICTNESS, TOKEN_PERMISSIONS, app, grants } from './grant-universe.js';

/** The definition, checked by brute force over every container set of the universe. */
function bruteForceCovers(caller: Caller, target: Caller): boolean {
  for (const permission of target.permissions) if (!caller.permissions.has(permission)) return false;
  for (const permission of TOKEN_PERMISSIONS) {
    for (const containers of CONTAINER_SETS) {
      const granted = transformFor(target, permission, containers);
      if (granted === null) continue;
      const held = transformFor(caller, permission, containers);
      if (held === null || STRICTNESS[held] > STRICTNESS[granted]) return false;
    }
  }
  return true;
}

const application = (id: string) => grants.map(({ permissions, rules }) => app(id, permissions, rules));

describe('coversGrants', () => {
  it('agrees with a brute-force check over every container (and pair of containers) below the rules', () => {
    fc.assert(
      fc.property(application('caller'), application('target'), (caller, target) => {
        expect(coversGrants(caller, target)).toBe(bruteForceCovers(caller, target));
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees with the brute force when the target is the caller with rules dropped or loosened (the cases near the boundary)', () => {
    fc.assert(
      fc.property(application('caller'), fc.array(fc.nat(), { maxLength: 3 }), fc.constantFrom<Transform>('reveal', 'mask', 'redact'), (caller, drops, transform) => {
        const rules = caller.rules.filter((_, i) => !drops.includes(i)).map((r, i) => (i === 0 ? { ...r, transform } : r));
        const target = app('target', [...caller.permissions], rules);
        expect(coversGrants(caller, target)).toBe(bruteForceCovers(caller, target));
      }),
      { numRuns: 1000 },
    );
  });

  it('every application covers itself', () => {
    fc.assert(fc.property(application('a'), (a) => coversGrants(a, a)));
  });

  it('a caller that masks where the target reveals does not cover it; one that reveals there does', () => {
    const revealPci: AccessRule = { priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] };
    const maskAll: AccessRule = { priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] };
    const target = app('target', ['token:read'], [revealPci, maskAll]);
    expect(coversGrants(app('weak', ['token:read'], [maskAll]), target)).toBe(false);
    expect(coversGrants(app('strong', ['token:read', 'token:use'], [{ ...revealPci, container: '/' }]), target)).toBe(true);
    // Implicit rules: token:read masks on /, so the target's /pci/ reveal is not covered.
    expect(coversGrants(app('implicit', ['token:read']), target)).toBe(false);
  });

  it('a missing permission is not covered, even one no rule mentions', () => {
    expect(coversGrants(app('a', ['token:read']), app('b', ['token:read', 'reactor:create']))).toBe(false);
    expect(coversGrants(app('a', ['token:read', 'reactor:create']), app('b', ['token:read']))).toBe(true);
  });
});
