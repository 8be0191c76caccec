import { type Caller, isTenantAdministrator, makeCaller, mayActAs } from './caller.js';
import { AuthorizationError } from '../errors/errors.js';
import type { ApplicationRecord } from '../storage/store.js';

/*
 * Who may act on an application (docs/authority.md). Holding a key of an application, or choosing
 * its grants, is acting as it: a management permission alone (`application:update`) is not
 * administration. A tenant administrator may act on any application; anyone else only on one whose
 * every grant it holds itself (coversGrants), before and after the change. Renaming, and reading
 * applications and their key ids, give no power over data and stay with the plain permissions.
 */

/**
 * The application as if it held every permission its rules name: a rule for a permission it does
 * not hold yet is a grant waiting for an administrator to add the permission (expecting the default
 * mask), so whoever writes it must hold that grant too.
 */
function withRulePermissions<A extends Pick<ApplicationRecord, 'permissions' | 'rules'>>(app: A): A {
  return { ...app, permissions: [...new Set([...app.permissions, ...app.rules.flatMap((rule) => rule.permissions)])] };
}

/** What the caller tries to do to the application, for the refusal. */
export type ApplicationAction = 'create' | 'change the grants of' | 'change the allowed origins of' | 'add a key to' | 'regenerate the key of' | 'delete a key of' | 'delete';

/**
 * AuthorizationError unless the caller is a tenant administrator or holds every grant of each of
 * `applications` (the target as it is, and as it would be). The message names only the caller's
 * own shortfall, never the target's grants.
 */
export function requireMayActOn(
  caller: Caller,
  action: ApplicationAction,
  id: string,
  ...applications: Pick<ApplicationRecord, 'tenantId' | 'id' | 'type' | 'permissions' | 'rules'>[]
): void {
  if (isTenantAdministrator(caller)) return;
  if (applications.every((app) => mayActAs(caller, makeCaller(withRulePermissions(app))))) return;
  const target = action === 'create' ? 'an application' : `application '${id}'`;
  throw new AuthorizationError(
    `To ${action} ${target} a caller needs every permission and access grant it would hold, or must be a tenant administrator ` +
      '(a management application holding application:create and application:update)',
  );
}
