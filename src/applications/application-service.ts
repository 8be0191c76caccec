import { randomUUID } from 'node:crypto';
import { refuseNul } from '../validation/no-nul.js';
import type { AuditLog } from '../audit/audit.js';
import { ADMINISTRATOR_PERMISSIONS, type Caller, isTenantAdministrator, requirePermission } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import { ConflictError, NotFoundError, ValidationError, concurrentChange, requireCreated } from '../errors/errors.js';
import { type PageQuery, type Paginated, parsePage, toPaginated } from '../common/pagination.js';
import type { AccessRule, ApplicationType, Permission } from '../permissions/permissions.js';
import type { ApplicationChanges, ApplicationKeyRecord, ApplicationRecord, SessionGrants, Store } from '../storage/store.js';
import type { EventSink } from '../webhooks/webhook-events-emitter.js';
import { formatIso } from '../common/time.js';
import { boundGrantsFor } from '../auth/session-grants.js';
import { MIN_KEY_LENGTH, newApplicationKey } from '../auth/api-keys.js';
import { AuthCache } from '../auth/auth-cache.js';
import { requireMayActOn } from '../auth/application-authz.js';
import { type ApplicationInput, type CreateApplicationRequest, type UpdateApplicationRequest, parseCreateApplication, parseUpdateApplication } from './application-input.js';

/**
 * The refusal when a change would leave the tenant unable to manage its applications: a tenant
 * that has a tenant administrator (ADMINISTRATOR_PERMISSIONS) always keeps one.
 */
function lastAdministrator(id: string): ConflictError {
  return new ConflictError(
    `Application '${id}' is the tenant's last application holding application:create and application:update; ` +
      'deleting it or removing those permissions would lock the tenant out. Give them to another application first.',
  );
}

/** An application as the API returns it. `key` appears only on create and regenerate. */
export interface ApplicationView {
  id: string;
  tenant_id: string;
  name: string;
  type: ApplicationType;
  permissions: Permission[];
  rules: AccessRule[];
  /** Public applications: the page origins its browser elements may work in (docs/elements.md); [] is any. */
  allowed_origins?: string[];
  key?: string;
  created_by?: string;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

/**
 * Applications and their API keys. Keys are random, shown once, stored as SHA-256 hashes, and
 * compared in constant time.
 */
export class ApplicationService {
  #store: Store;
  #clock: Clock;
  #audit: AuditLog;
  /** Resolved keys (application and session keys alike), for `authCacheMs`. */
  #callers: AuthCache;
  #events: EventSink | undefined;

  /** `events`: where application.created/updated/deleted go once the change committed (webhooks). */
  constructor(deps: { store: Store; clock: Clock; audit: AuditLog; authCache?: AuthCache; events?: EventSink }) {
    this.#events = deps.events;
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#audit = deps.audit;
    this.#callers = deps.authCache ?? new AuthCache(0);
  }

  /**
   * Creates an application (application:create) and returns it with its key, shown this once. A
   * caller that is not a tenant administrator may only create applications whose every grant it
   * holds itself (application-authz.ts).
   */
  async create(caller: Caller, body: CreateApplicationRequest): Promise<ApplicationView & { key: string }> {
    return this.#audit.guard(caller, 'application:create', null, async () => {
      requirePermission(caller, 'application:create');
      refuseNul(body, '');
      const input = parseCreateApplication(body);
      requireMayActOn(caller, 'create', '', { tenantId: caller.tenantId, id: '', ...input });
      const { app, key } = await this.#insert(caller, input);
      this.#record(caller, 'application:create', app.id);
      await this.#emit(caller, 'application.created', app.id);
      return { ...view(app), key };
    });
  }

  /**
   * A tenant's first (management) application, not stored: the vault stores it with the tenant in
   * one transaction (Store.createTenant). `key` may be given (at least 24 characters), otherwise
   * one is generated.
   */
  initialApplication(
    tenantId: string,
    input: { name: string; type: ApplicationType; permissions?: Permission[]; rules?: AccessRule[]; key?: string },
  ): { record: ApplicationRecord; keyRecord: ApplicationKeyRecord; view: ApplicationView & { key: string } } {
    const { key: given, ...rest } = input;
    if (given !== undefined && given.length < MIN_KEY_LENGTH) {
      throw ValidationError.field('key', `must be at least ${MIN_KEY_LENGTH} characters`);
    }
    const parsed = parseCreateApplication({ ...rest, permissions: rest.permissions ?? [], rules: rest.rules ?? [] });
    const { app, keyRecord, key } = this.#newRecord(tenantId, parsed, null, null, given);
    return { record: app, keyRecord, view: { ...view(app), key } };
  }

  async get(caller: Caller, id: string): Promise<ApplicationView> {
    requirePermission(caller, 'application:read');
    refuseNul(id, 'id');
    return view(await this.#find(caller, id));
  }

  /**
   * The calling key's own application (Basis Theory's `GET /applications/key`): any application may
   * read itself, so no permission is checked. A session key belongs to no application: 404.
   */
  async getByKey(caller: Caller): Promise<ApplicationView> {
    if (caller.session !== undefined) throw new NotFoundError('Application', 'of this session key');
    return view(await this.#find(caller, caller.applicationId));
  }

  async list(caller: Caller, query: PageQuery = {}): Promise<Paginated<ApplicationView>> {
    requirePermission(caller, 'application:read');
    const page = parsePage(query);
    return toPaginated(page, await this.#store.listApplications(caller.tenantId, page), view);
  }

  /**
   * Replaces the name, and the permissions and rules when given (application:update). The type and
   * key stay. Changing permissions or rules needs a tenant administrator or a caller that holds
   * every grant of the application both before and after (so no caller widens itself or another).
   */
  async update(caller: Caller, id: string, body: UpdateApplicationRequest): Promise<ApplicationView> {
    return this.#audit.guard(caller, 'application:update', id, async () => {
      requirePermission(caller, 'application:update');
      refuseNul(id, 'id');
      refuseNul(body, '');
      const current = await this.#find(caller, id);
      const input = parseUpdateApplication(body, current);
      // Only what the body names is written, so a concurrent change of another field stays.
      const named = body as Record<string, unknown>;
      const changes: ApplicationChanges = { name: input.name, modifiedBy: caller.applicationId, modifiedAt: this.#clock.now() };
      if ('permissions' in named) changes.permissions = input.permissions;
      if ('rules' in named) changes.rules = input.rules;
      if ('allowed_origins' in named) changes.allowedOrigins = input.allowedOrigins;
      const grantsChange = changes.permissions !== undefined || changes.rules !== undefined;
      if (grantsChange) requireMayActOn(caller, 'change the grants of', current.id, current, { ...current, permissions: input.permissions, rules: input.rules });
      // Where an application's key works is part of what it may do: changing it is acting on it
      // like changing its grants (docs/authority.md, docs/elements.md).
      if (changes.allowedOrigins !== undefined && !grantsChange) requireMayActOn(caller, 'change the allowed origins of', current.id, current);
      // A non-administrator's change of grants is written only while they are the ones just checked.
      const expected = grantsChange && !isTenantAdministrator(caller) ? { permissions: current.permissions, rules: current.rules } : undefined;
      const updated = await this.#store.updateApplication(caller.tenantId, current.id, changes, ADMINISTRATOR_PERMISSIONS, expected);
      if (updated.status === 'last_holder') throw lastAdministrator(id);
      if (updated.status === 'not_found') throw new NotFoundError('Application', id);
      if (updated.status === 'changed') throw concurrentChange('Application', current.id);
      this.#callers.clear();
      this.#record(caller, 'application:update', id);
      await this.#emit(caller, 'application.updated', id);
      return view(updated.record);
    });
  }

  /**
   * Issues a new key (application:update) that replaces every key of the application: all of its
   * old keys stop working at once. (To rotate without a gap, add a key with the keys API and
   * delete the old one once clients use the new one.) Holding the key is acting as the
   * application: a tenant administrator, or a caller holding every grant of it.
   */
  async regenerateKey(caller: Caller, id: string): Promise<ApplicationView> {
    return this.#audit.guard(caller, 'application:regenerate', id, async () => {
      requirePermission(caller, 'application:update');
      refuseNul(id, 'id');
      const current = await this.#find(caller, id);
      requireMayActOn(caller, 'regenerate the key of', current.id, current);
      const now = this.#clock.now();
      const { record, key } = newApplicationKey(current, caller.applicationId, now, boundGrantsFor(caller, current));
      const next: ApplicationRecord = { ...current, modifiedBy: caller.applicationId, modifiedAt: now };
      if (!(await this.#store.replaceApplicationKeys(record, caller.applicationId))) throw new NotFoundError('Application', id);
      this.#callers.clear();
      this.#record(caller, 'application:regenerate', id);
      await this.#emit(caller, 'application.updated', id);
      return { ...view(next), key };
    });
  }

  /** Deletes an application (application:delete): a tenant administrator, or a caller holding every grant of it. */
  async delete(caller: Caller, id: string): Promise<void> {
    await this.#audit.guard(caller, 'application:delete', id, async () => {
      requirePermission(caller, 'application:delete');
      refuseNul(id, 'id');
      requireMayActOn(caller, 'delete', String(id), await this.#find(caller, id));
      const deleted = await this.#store.deleteApplication(caller.tenantId, String(id), ADMINISTRATOR_PERMISSIONS);
      if (deleted === 'last_holder') throw lastAdministrator(String(id));
      if (deleted === 'not_found') throw new NotFoundError('Application', String(id));
      this.#callers.clear();
      this.#record(caller, 'application:delete', id);
      await this.#emit(caller, 'application.deleted', String(id));
    });
  }

  async #find(caller: Caller, id: string): Promise<ApplicationRecord> {
    const app = typeof id === 'string' ? await this.#store.getApplication(caller.tenantId, id) : null;
    if (!app) throw new NotFoundError('Application', String(id));
    return app;
  }

  async #insert(caller: Caller, input: ApplicationInput): Promise<{ app: ApplicationRecord; key: string }> {
    const made = this.#newRecord(caller.tenantId, input, caller.applicationId, boundGrantsFor(caller, input));
    requireCreated(await this.#store.createApplication(made.app, made.keyRecord), 'Application', made.app.id);
    return made;
  }

  /** A new application record with a new (or the given) key, bounded by `grants` (boundGrantsFor). */
  #newRecord(
    tenantId: string,
    input: ApplicationInput,
    createdBy: string | null,
    grants: SessionGrants | null,
    givenKey?: string,
  ): { app: ApplicationRecord; keyRecord: ApplicationKeyRecord; key: string } {
    const now = this.#clock.now();
    const app: ApplicationRecord = { id: randomUUID(), tenantId, ...input, createdBy, createdAt: now, modifiedBy: null, modifiedAt: null, credentialsGeneration: 0 };
    const { record: keyRecord, key } = newApplicationKey(app, createdBy, now, grants, givenKey);
    return { app, keyRecord, key };
  }

  async #emit(caller: Caller, type: 'application.created' | 'application.updated' | 'application.deleted', id: string): Promise<void> {
    await this.#events?.emit(caller.tenantId, type, { application_id: id, actor: caller.applicationId });
  }

  #record(caller: Caller, operation: string, resourceId: string): void {
    this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation, resourceId, outcome: 'success' });
  }
}

function view(app: ApplicationRecord): ApplicationView {
  const out: ApplicationView = {
    id: app.id,
    tenant_id: app.tenantId,
    name: app.name,
    type: app.type,
    permissions: app.permissions,
    rules: app.rules,
    created_at: formatIso(app.createdAt),
  };
  if (app.type === 'public') out.allowed_origins = [...(app.allowedOrigins ?? [])];
  if (app.createdBy !== null) out.created_by = app.createdBy;
  if (app.modifiedBy !== null) out.modified_by = app.modifiedBy;
  if (app.modifiedAt !== null) out.modified_at = formatIso(app.modifiedAt);
  return out;
}
