import { AuthorizationError, NotFoundError } from '../errors/errors.js';
import type { AccessRule, ApplicationType, Permission, Transform } from '../permissions/permissions.js';
import type { ContainerScope } from '../storage/store.js';
import { type CallerMaker, mintCaller } from './caller-brand.js';
import { isAncestorOrSelf } from './containers.js';

/**
 * Who is calling: a tenant, an application and its access rules. Every service operation takes a
 * Caller and decides authorization from it, so in-process use is exactly as safe as HTTP. Only the
 * vault makes Callers (`vault.authenticate(key)`): its services refuse a hand-built or copied one
 * (caller-brand.ts, docs/security.md).
 */
export interface Caller {
  readonly tenantId: string;
  readonly applicationId: string;
  readonly applicationType: ApplicationType;
  readonly permissions: ReadonlySet<Permission>;
  /** Effective rules, sorted by priority (explicit rules, or the implicit ones when there are none). */
  readonly rules: readonly AccessRule[];
  /**
   * Set when the caller is a session key: then `applicationId` is the session's id (what token
   * `created_by` and audit entries name), and permissions and rules are the session's grants
   * bounded by its authorizer's current grants (src/auth/session-grants.ts).
   */
  readonly session?: SessionIdentity;
  /**
   * The application's credentials generation (ApplicationRecord.credentialsGeneration) when this
   * Caller was built from its stored record, as `authenticate` does for a key. A session it creates
   * or authorizes records it, so a session made with a key already revoked (one an auth cache
   * still remembered) ends at once. Undefined on session Callers and on Callers built without it.
   */
  readonly credentialsGeneration?: number;
  /**
   * The page origins the caller's public application lets browser elements work in (a session:
   * those of the public application that created it); absent: any. Checked by `requirePageOrigin`.
   */
  readonly allowedOrigins?: readonly string[];
}

/** Who stands behind a session caller. */
export interface SessionIdentity {
  readonly id: string;
  /** The public application that created the session. */
  readonly createdBy: string;
  /** The private application that authorized it. */
  readonly authorizedBy: string;
  readonly expiresAt: number;
}

/** Permissions that act on tokens in containers, and so are decided by access rules. */
export const TOKEN_PERMISSIONS: readonly Permission[] = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'];

/**
 * The permissions that make a management application a tenant administrator: with both it can
 * create an application with any grants, or widen any application's grants, so it already holds
 * every power of its tenant (docs/authority.md). A tenant always keeps one (see
 * ApplicationService).
 */
export const ADMINISTRATOR_PERMISSIONS: readonly Permission[] = Object.freeze(['application:create', 'application:update']);

/**
 * Whether the caller is a tenant administrator: the one principal that may act through another
 * (bind a reactor to any application, change what runs as or receives others' data, mint keys,
 * change grants) without holding that other's grants. Everyone else is bounded by coversGrants.
 */
export function isTenantAdministrator(caller: Caller): boolean {
  return caller.applicationType === 'management' && caller.session === undefined && ADMINISTRATOR_PERMISSIONS.every((p) => caller.permissions.has(p));
}

/**
 * Whether the caller may act through `target` (run code as it, hold a key of it, give it grants):
 * a tenant administrator may; anyone else only when it holds every grant `target` holds.
 */
export function mayActAs(caller: Caller, target: Caller): boolean {
  return isTenantAdministrator(caller) || coversGrants(caller, target);
}

/**
 * The Caller of an application as stored: its permissions and rules (the implicit rules when it
 * has none). Minted by the vault (caller-brand.ts), so the vault's services accept it.
 */
export function makeCaller(app: ApplicationGrants): Caller {
  return mintApplicationCaller(app, 'vault');
}

/** What makeCaller reads of an application. */
export interface ApplicationGrants {
  tenantId: string;
  id: string;
  type: ApplicationType;
  permissions: readonly Permission[];
  rules: readonly AccessRule[];
  credentialsGeneration?: number;
  allowedOrigins?: readonly string[];
}

/** As makeCaller, by the given maker (tokenvault/testing mints its own: test-callers.ts). */
export function mintApplicationCaller<Extra extends object = object>(app: ApplicationGrants, maker: CallerMaker, extra?: Extra): Caller & Extra {
  const permissions = new Set(app.permissions);
  const rules = app.rules.length > 0 ? sortRules(app.rules) : implicitRules(permissions);
  const fields = {
    tenantId: app.tenantId,
    applicationId: app.id,
    applicationType: app.type,
    permissions,
    rules,
    credentialsGeneration: app.credentialsGeneration,
    allowedOrigins: app.allowedOrigins,
  };
  return mintCaller(fields, maker, extra);
}

/**
 * AuthorizationError when a browser request is from a page the caller's public application does not
 * allow (docs/elements.md, "Allowed page origins"). `pageOrigin`: the page a browser element's frame
 * names (its `<prefix>-PAGE-ORIGIN` header), null when not from a frame. `requestOrigin`: the
 * browser-set `Origin` of a request from a page other than the vault's own (null when absent or the
 * vault's own origin, i.e. a frame's request); an opaque origin (`null`) is never listed, so refused.
 */
export function requirePageOrigin(caller: Caller, pageOrigin: string | null, requestOrigin: string | null = null): void {
  if (caller.allowedOrigins === undefined) return;
  if (requestOrigin !== null && !caller.allowedOrigins.includes(requestOrigin)) {
    throw new AuthorizationError(
      `This application does not allow requests from pages of ${JSON.stringify(requestOrigin.slice(0, 200))} (the request's Origin); an administrator may add the origin to the application's allowed_origins`,
    );
  }
  if (pageOrigin === null || caller.allowedOrigins.includes(pageOrigin)) return;
  throw new AuthorizationError(
    `This application does not allow browser elements on pages of ${JSON.stringify(pageOrigin.slice(0, 200))}; an administrator may add the origin to the application's allowed_origins`,
  );
}

/**
 * Without explicit rules, the application's token permissions hold on `/`: with transform `mask`
 * for create/read/update/delete/search and `reveal` for use (ARCHITECTURE.md, Reference facts).
 */
function implicitRules(permissions: ReadonlySet<Permission>): AccessRule[] {
  const masked = TOKEN_PERMISSIONS.filter((p) => p !== 'token:use' && permissions.has(p));
  const rules: AccessRule[] = [];
  if (masked.length > 0) rules.push({ priority: 0, container: '/', transform: 'mask', permissions: masked });
  if (permissions.has('token:use')) rules.push({ priority: 1, container: '/', transform: 'reveal', permissions: ['token:use'] });
  return rules;
}

function sortRules(rules: readonly AccessRule[]): AccessRule[] {
  // Stable: equal priorities keep their given order.
  return [...rules].sort((a, b) => a.priority - b.priority);
}

/** Throws AuthorizationError unless the application holds the permission. */
export function requirePermission(caller: Caller, permission: Permission): void {
  if (!caller.permissions.has(permission)) {
    // A management key on a token route: the grant could never be added, so say what to use instead.
    const why =
      caller.applicationType === 'management' && permission.startsWith('token:')
        ? '; management applications never hold token permissions: use a private or public application (docs/authority.md)'
        : '';
    throw new AuthorizationError(`The application lacks the '${permission}' permission${why}`);
  }
}

/** How much a transform hides: reveal < mask < redact. */
export const STRICTNESS: Readonly<Record<Transform, number>> = { reveal: 0, mask: 1, redact: 2 };

/**
 * The transform granted for `permission` on a token in `containers`, or null when any container is
 * not granted. Each container is decided by the first rule (by priority) whose container is it or
 * an ancestor and which lists the permission; a token in several containers needs a grant on each,
 * and the most restrictive transform wins.
 */
export function transformFor(caller: Caller, permission: Permission, containers: readonly string[]): Transform | null {
  if (!caller.permissions.has(permission)) return null;
  let result: Transform | null = null;
  for (const container of containers) {
    const rule = caller.rules.find((r) => r.permissions.includes(permission) && isAncestorOrSelf(r.container, container));
    if (!rule) return null;
    if (result === null || STRICTNESS[rule.transform] > STRICTNESS[result]) result = rule.transform;
  }
  return result;
}

/**
 * As transformFor, but throws AuthorizationError naming the permission when not granted. With
 * `nameContainer` (containers the caller itself sent, on create or update) the message names the
 * first container no rule grants; a stored token's containers are not named, since a caller
 * without a grant on them has no business learning them.
 */
export function requireTransform(caller: Caller, permission: Permission, containers: readonly string[], nameContainer = false): Transform {
  const transform = transformFor(caller, permission, containers);
  if (transform === null) {
    requirePermission(caller, permission);
    const refused = nameContainer ? containers.find((c) => transformFor(caller, permission, [c]) === null) : undefined;
    if (refused !== undefined) {
      throw new AuthorizationError(
        `The application's access rules do not grant '${permission}' on container '${refused}': add a rule for it (or an ancestor) or choose another container`,
      );
    }
    throw new AuthorizationError(`The application's access rules do not grant '${permission}' on the token's containers`);
  }
  return transform;
}

/**
 * As requireTransform, for an operation on a stored token (in `containers`) that the caller named
 * by `id` (as it sent it, so the message is the one of a missing id, word for word): when the caller holds no grant at all on it (no token permission whose rules grant every one of
 * its containers), the answer is the NotFoundError of a missing id, so that guessable ids
 * (`cust-10042-ssn`) do not tell a caller which tokens exist (ARCHITECTURE.md, Disclosure: "answer as if
 * a token were missing wherever the caller holds no grant on it"). A caller holding some other
 * grant on it can see that it exists already, and gets the AuthorizationError.
 */
export function requireTokenTransform(caller: Caller, permission: Permission, containers: readonly string[], id: string): Transform {
  const transform = transformFor(caller, permission, containers);
  if (transform !== null) return transform;
  if (!holdsAnyGrant(caller, containers)) throw new NotFoundError('Token', id);
  return requireTransform(caller, permission, containers);
}

/** True when some token permission is granted on every one of `containers` (the caller may see such a token exists). */
export function holdsAnyGrant(caller: Caller, containers: readonly string[]): boolean {
  return TOKEN_PERMISSIONS.some((permission) => transformFor(caller, permission, containers) !== null);
}

/**
 * True when `caller` holds every grant `target` holds: every permission of `target`, and for each
 * token permission, wherever `target`'s rules grant it with transform T, `caller`'s rules grant it
 * too with a transform at least as revealing (reveal < mask < redact in strictness). Acting
 * through `target` (mayActAs) needs this unless the caller is a tenant administrator, so no
 * principal can act as one more privileged than itself.
 *
 * Checking the rule containers of both callers is exact: the rule that decides a container is
 * chosen among the rules whose container is it or an ancestor, so every container decides as the
 * deepest rule container above it does (and one below no rule container is granted by neither).
 * A token in several containers gets the most restrictive transform of its containers, so covering
 * each container alone covers every combination.
 * @example coversGrants(makeCaller(author), makeCaller(target)) // false when target may reveal where author may only mask
 */
export function coversGrants(caller: Caller, target: Caller): boolean {
  for (const permission of target.permissions) {
    if (!caller.permissions.has(permission)) return false;
  }
  const containers = new Set<string>();
  for (const rule of [...caller.rules, ...target.rules]) containers.add(rule.container.toLowerCase());
  for (const permission of TOKEN_PERMISSIONS) {
    if (!target.permissions.has(permission)) continue;
    for (const container of containers) {
      const granted = transformFor(target, permission, [container]);
      if (granted === null) continue;
      const held = transformFor(caller, permission, [container]);
      if (held === null || STRICTNESS[held] > STRICTNESS[granted]) return false;
    }
  }
  return true;
}

/**
 * The containers on which `permission` is granted (`reveal` false) or granted with the reveal
 * transform (`reveal` true), as scopes a store can filter on, so that pages are full and counts
 * exact (a token matches when every one of its containers lies in some scope). It agrees with
 * transformFor container by container: a container is granted iff some rule listing the permission
 * is ancestor-or-self of it; it is revealed iff the first such rule (by priority) reveals, that is
 * iff some revealing rule matches it and no earlier non-revealing rule does. Earlier rules that
 * are ancestors shadow a rule entirely; earlier descendants carve out an exception; unrelated
 * containers can never both match one path. No permission: no scope, so nothing matches.
 */
export function grantScopes(caller: Caller, permission: Permission, reveal: boolean): ContainerScope[] {
  if (!caller.permissions.has(permission)) return [];
  const rules = caller.rules.filter((r) => r.permissions.includes(permission));
  const scopes: ContainerScope[] = [];
  rules.forEach((rule, i) => {
    if (reveal && rule.transform !== 'reveal') return;
    const prefix = rule.container.toLowerCase();
    const earlier = reveal
      ? rules
          .slice(0, i)
          .filter((r) => r.transform !== 'reveal')
          .map((r) => r.container.toLowerCase())
      : [];
    if (earlier.some((e) => isAncestorOrSelf(e, prefix))) return;
    const except = [...new Set(earlier.filter((e) => isAncestorOrSelf(prefix, e)))];
    if (!scopes.some((s) => s.prefix === prefix && s.except.length === 0)) scopes.push({ prefix, except });
  });
  return scopes;
}
