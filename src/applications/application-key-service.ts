import type { AuditLog } from '../audit/audit.js';
import { refuseNul } from '../validation/no-nul.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import { ConflictError, NotFoundError } from '../errors/errors.js';
import type { ApplicationKeyRecord, ApplicationRecord, Store } from '../storage/store.js';
import { formatIso } from '../common/time.js';
import { newApplicationKey } from '../auth/api-keys.js';
import type { EventSink } from '../webhooks/webhook-events-emitter.js';
import { boundGrantsFor } from '../auth/session-grants.js';
import { requireMayActOn } from '../auth/application-authz.js';
import type { AuthCache } from '../auth/auth-cache.js';

/** Most keys one application may hold at once: enough to rotate, not a place to hoard credentials. */
export const MAX_KEYS_PER_APPLICATION = 20;

/** An application key as the API returns it. `key` appears only in the response that created it. */
export interface ApplicationKeyView {
  id: string;
  key?: string;
  created_by?: string;
  created_at: string;
}

/**
 * The keys of an application: each application has one or more, any of which authenticates as it.
 * A key is shown once, when created; only its SHA-256 is stored. Creating and deleting keys needs
 * application:update, reading them application:read (management applications; a session never
 * holds either). Holding a key is acting as the application, so creating or deleting one also
 * needs a tenant administrator or a caller holding every grant of the application
 * (application-authz.ts); each is audited and announced (`application.key_created`,
 * `application.key_deleted`), so the application's owners see keys they did not make.
 */
export class ApplicationKeyService {
  #store: Store;
  #clock: Clock;
  #audit: AuditLog;
  #callers: AuthCache;
  #events: EventSink | undefined;

  constructor(deps: { store: Store; clock: Clock; audit: AuditLog; authCache: AuthCache; events?: EventSink }) {
    this.#events = deps.events;
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#audit = deps.audit;
    this.#callers = deps.authCache;
  }

  /** Adds a key to an application and returns it, shown this once (at most 20 keys per application: 409 beyond). */
  async create(caller: Caller, applicationId: string): Promise<ApplicationKeyView> {
    return this.#audit.guard(caller, 'application:key_create', applicationId, async () => {
      requirePermission(caller, 'application:update');
      refuseNul(applicationId, 'id');
      const app = await this.#application(caller, applicationId);
      requireMayActOn(caller, 'add a key to', app.id, app);
      // Bounded by the grants just checked: a widening that lands later does not reach the key.
      const { record, key } = newApplicationKey(app, caller.applicationId, this.#clock.now(), boundGrantsFor(caller, app));
      const result = await this.#store.createApplicationKey(record, MAX_KEYS_PER_APPLICATION);
      if (result === 'not_found') throw new NotFoundError('Application', String(applicationId));
      if (result === 'limit') {
        throw new ConflictError(`Application '${applicationId}' already has ${MAX_KEYS_PER_APPLICATION} keys, the most it may hold; delete one first`);
      }
      this.#record(caller, 'application:key_create', record);
      await this.#emit(caller, 'application.key_created', record);
      return { ...view(record), key };
    });
  }

  /** The application's keys, oldest first, without their secrets. */
  async list(caller: Caller, applicationId: string): Promise<ApplicationKeyView[]> {
    requirePermission(caller, 'application:read');
    refuseNul(applicationId, 'id');
    await this.#application(caller, applicationId);
    return (await this.#store.listApplicationKeys(caller.tenantId, applicationId)).map(view);
  }

  /** One key of the application, without its secret. */
  async get(caller: Caller, applicationId: string, keyId: string): Promise<ApplicationKeyView> {
    requirePermission(caller, 'application:read');
    refuseNul({ id: applicationId, key_id: keyId }, '');
    await this.#application(caller, applicationId);
    const key = typeof keyId === 'string' ? await this.#store.getApplicationKey(caller.tenantId, applicationId, keyId) : null;
    if (key === null) throw new NotFoundError('Application key', String(keyId));
    return view(key);
  }

  /** Deletes a key: it stops authenticating at once on this instance. An application's last key cannot be deleted (409). */
  async delete(caller: Caller, applicationId: string, keyId: string): Promise<void> {
    await this.#audit.guard(caller, 'application:key_delete', applicationId, async () => {
      requirePermission(caller, 'application:update');
      refuseNul({ id: applicationId, key_id: keyId }, '');
      requireMayActOn(caller, 'delete a key of', String(applicationId), await this.#application(caller, applicationId));
      const key = typeof keyId === 'string' ? await this.#store.getApplicationKey(caller.tenantId, applicationId, keyId) : null;
      if (key === null) throw new NotFoundError('Application key', String(keyId));
      const result = await this.#store.deleteApplicationKey(caller.tenantId, applicationId, keyId);
      if (result === 'not_found') throw new NotFoundError('Application key', keyId);
      if (result === 'last_key') {
        throw new ConflictError(`Key '${keyId}' is the only key of application '${applicationId}'; create another key first, or delete the application`);
      }
      this.#callers.clear();
      this.#record(caller, 'application:key_delete', key);
      await this.#emit(caller, 'application.key_deleted', key);
    });
  }

  async #application(caller: Caller, id: string): Promise<ApplicationRecord> {
    const app = typeof id === 'string' ? await this.#store.getApplication(caller.tenantId, id) : null;
    if (app === null) throw new NotFoundError('Application', String(id));
    return app;
  }

  async #emit(caller: Caller, type: 'application.key_created' | 'application.key_deleted', key: ApplicationKeyRecord): Promise<void> {
    await this.#events?.emit(caller.tenantId, type, { application_id: key.applicationId, key_id: key.id, actor: caller.applicationId });
  }

  /** The entry names the application (resource) and the key's id (detail); never the key. */
  #record(caller: Caller, operation: string, key: ApplicationKeyRecord): void {
    this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation, resourceId: key.applicationId, outcome: 'success', detail: `key:${key.id}` });
  }
}

function view(key: ApplicationKeyRecord): ApplicationKeyView {
  const out: ApplicationKeyView = { id: key.id, created_at: formatIso(key.createdAt) };
  if (key.createdBy !== null) out.created_by = key.createdBy;
  return out;
}
