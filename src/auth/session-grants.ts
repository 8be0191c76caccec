import { type Caller, STRICTNESS, type SessionIdentity, TOKEN_PERMISSIONS, isTenantAdministrator, makeCaller, transformFor } from './caller.js';
import { deriveCaller, mintCaller } from './caller-brand.js';
import type { AccessRule, Permission, Transform } from '../permissions/permissions.js';
import type { ApplicationRecord, SessionGrants, SessionRecord } from '../storage/store.js';

/** Depth of a container path: '/' is 0, '/pci/' 1, '/pci/high/' 2. */
const depth = (container: string) => container.split('/').length - 2;

/**
 * The grants two callers share, as permissions and rules: a permission held by both, and on every
 * container the stricter of their two transforms, nothing where either grants nothing. Exact:
 * `transformFor(result, p, cs)` equals the stricter of `transformFor(a, p, cs)` and
 * `transformFor(b, p, cs)` for every permission and container list (test/auth/session-grants.test.ts,
 * a property test).
 *
 * Why rules can express it: a container is decided, for each caller, as the deepest of that caller's
 * rule containers above it is (see coversGrants), so both callers decide every container as the
 * deepest container of the union of their rule containers above it does. One rule per such
 * container, deepest first, copies that decision. Where a caller grants nothing, it grants nothing
 * on any ancestor either (its grants are unions of subtrees), so no shallower rule can grant there.
 */
export function intersectGrants(a: Caller, b: Caller): { permissions: Permission[]; rules: AccessRule[] } {
  const permissions = [...a.permissions].filter((p) => b.permissions.has(p));
  const containers = [...new Set([...a.rules, ...b.rules].map((r) => r.container.toLowerCase()))];
  containers.sort((x, y) => depth(y) - depth(x) || (x < y ? -1 : x > y ? 1 : 0));
  const rules: AccessRule[] = [];
  containers.forEach((container, priority) => {
    const byTransform = new Map<Transform, Permission[]>();
    for (const permission of TOKEN_PERMISSIONS) {
      const ta = transformFor(a, permission, [container]);
      const tb = transformFor(b, permission, [container]);
      if (ta === null || tb === null) continue;
      const transform = STRICTNESS[ta] >= STRICTNESS[tb] ? ta : tb;
      byTransform.set(transform, [...(byTransform.get(transform) ?? []), permission]);
    }
    for (const [transform, granted] of byTransform) rules.push({ priority, container, transform, permissions: granted });
  });
  return { permissions, rules };
}

/**
 * `a` holding only what it shares with `b` (intersectGrants): who acts is still `a`. Rules are
 * explicit here, so an empty list means "no grants", never the implicit rules makeCaller would add.
 */
export function sharedCaller(a: Caller, b: Caller): Caller {
  return deriveCaller(a, intersectGrants(a, b));
}

/**
 * What a principal made by `caller` for `application` (a reactor binding, a key) may act with
 * beyond the application's current grants: nothing more when a tenant administrator made it
 * (null), else the grants the application has now, which the caller covers. A later widening of
 * the application by an administrator then does not reach whoever made it (docs/authority.md).
 */
export function boundGrantsFor(caller: Caller, application: Pick<ApplicationRecord, 'permissions' | 'rules'>): SessionGrants | null {
  return isTenantAdministrator(caller) ? null : { permissions: [...application.permissions], rules: [...application.rules] };
}

/** The application as it is now, within `bound` (boundGrantsFor) when there is one. */
export function withinBoundGrants(application: ApplicationRecord, bound: SessionGrants | null): Caller {
  const now = makeCaller(application);
  return bound === null ? now : sharedCaller(now, makeCaller({ ...application, ...bound }));
}

/**
 * The Caller of an authorized session, computed at request time: the session's grants bounded by
 * what its authorizing application holds now, so a later reduction of the authorizer's permissions
 * or rules applies to its sessions at once (within the auth cache's bound on other instances).
 * Its `applicationId` is the session's id; `session` names who created and authorized it.
 */
export function sessionCaller(
  session: SessionRecord & { authorizedBy: string; grants: NonNullable<SessionRecord['grants']> },
  authorizer: ApplicationRecord,
  creator?: Pick<ApplicationRecord, 'allowedOrigins'>,
): Caller {
  const granted = makeCaller({ tenantId: session.tenantId, id: session.id, type: authorizer.type, ...session.grants });
  const identity: SessionIdentity = { id: session.id, createdBy: session.applicationId, authorizedBy: session.authorizedBy, expiresAt: session.expiresAt };
  const caller = boundedSessionCaller(session.tenantId, identity, granted, authorizer);
  // A session works in browser elements only on the pages its creating public application allows.
  const origins = creator?.allowedOrigins ?? [];
  return origins.length > 0 ? deriveCaller(caller, { allowedOrigins: origins }) : caller;
}

/**
 * A session's Caller rebuilt from grants that were already its effective ones when it asked for
 * an asynchronous run (stored sealed with the request), bounded again by what its authorizer holds
 * now: the run never acts with more than either.
 */
export function resumedSessionCaller(tenantId: string, identity: SessionIdentity, effective: SessionGrants, authorizer: ApplicationRecord): Caller {
  // Not through makeCaller: these rules are explicit, and an empty list means "no grants".
  const granted = mintCaller({ tenantId, applicationId: identity.id, applicationType: authorizer.type, ...effective }, 'vault');
  return boundedSessionCaller(tenantId, identity, granted, authorizer);
}

function boundedSessionCaller(tenantId: string, identity: SessionIdentity, granted: Caller, authorizer: ApplicationRecord): Caller {
  const { permissions, rules } = intersectGrants(granted, makeCaller(authorizer));
  // Not through makeCaller: an empty rule list here means "no grants", not the implicit rules.
  return mintCaller({ tenantId, applicationId: identity.id, applicationType: authorizer.type, permissions, rules, session: identity }, 'vault');
}
