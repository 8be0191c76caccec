/**
 * What the grant property tests (covers-grants, session-grants) draw and check against: rules
 * over the container segments a and b, and every container set a token of those segments can have.
 */
import fc from 'fast-check';
import { makeCaller } from '../../src/auth/caller.js';
import { type AccessRule, PERMISSIONS_BY_TYPE, type Permission, type Transform } from '../../src/permissions/permissions.js';

export const TOKEN_PERMISSIONS: Permission[] = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'];
export const STRICTNESS: Record<Transform, number> = { reveal: 0, mask: 1, redact: 2 };

/** A private application's Caller of tenant t1 with these grants. */
export const app = (id: string, permissions: Permission[], rules: AccessRule[] = []) => makeCaller({ tenantId: 't1', id, type: 'private', permissions, rules });

/** Every container path of depth 0 to 3 over the segments a and b: deeper than any generated rule. */
export const UNIVERSE: string[] = (() => {
  const paths = ['/'];
  for (let depth = 0; depth < 3; depth++) {
    for (const path of paths.filter((p) => p.split('/').length - 2 === depth)) paths.push(`${path}a/`, `${path}b/`);
  }
  return paths;
})();

/** Tokens in one container, and in every pair of containers. */
export const CONTAINER_SETS: string[][] = [...UNIVERSE.map((c) => [c]), ...UNIVERSE.flatMap((c, i) => UNIVERSE.slice(i + 1).map((d) => [c, d]))];

const container = fc.array(fc.constantFrom('a', 'b'), { maxLength: 2 }).map((segments) => (segments.length === 0 ? '/' : `/${segments.join('/')}/`));
const rule: fc.Arbitrary<AccessRule> = fc.record({
  priority: fc.integer({ min: 0, max: 3 }),
  container,
  transform: fc.constantFrom<Transform>('reveal', 'mask', 'redact'),
  permissions: fc.subarray(TOKEN_PERMISSIONS, { minLength: 1 }),
});

/** A private application's grants: any of its permissions, and no rules or up to five. */
export const grants = fc.record({
  permissions: fc.subarray([...PERMISSIONS_BY_TYPE.private]),
  rules: fc.oneof(fc.constant<AccessRule[]>([]), fc.array(rule, { maxLength: 5 })),
});
