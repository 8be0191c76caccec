import type { AuditLog } from '../audit.js';
import { refuseNul } from '../validation/no-nul.js';
import { type Caller, requirePermission } from '../caller.js';
import type { Clock } from '../clock.js';
import { ConflictError, NotFoundError } from '../errors.js';
import type { ApplicationKeyRecord, Store } from '../storage/store.js';
import { formatIso } from '../time.js';
import { newApplicationKey } from './api-keys.js';
import type { AuthCache } from './auth-cache.js';

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
 * holds either).
 */
export class ApplicationKeyService {
  #store: Store;
  #clock: Clock;
  #audit: AuditLog;
  #callers: AuthCache;

  constructor(deps: { store: Store; clock: Clock; audit: AuditLog; authCache: AuthCache }) {
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
      const { record, key } = newApplicationKey({ tenantId: caller.tenantId, id: String(applicationId) }, caller.applicationId, this.#clock.now());
      const result = await this.#store.createApplicationKey(record, MAX_KEYS_PER_APPLICATION);
      if (result === 'not_found') throw new NotFoundError('Application', String(applicationId));
      if (result === 'limit') {
        throw new ConflictError(`Application '${applicationId}' already has ${MAX_KEYS_PER_APPLICATION} keys, the most it may hold; delete one first`);
      }
      this.#record(caller, 'application:key_create', record);
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
      await this.#application(caller, applicationId);
      const key = typeof keyId === 'string' ? await this.#store.getApplicationKey(caller.tenantId, applicationId, keyId) : null;
      if (key === null) throw new NotFoundError('Application key', String(keyId));
      const result = await this.#store.deleteApplicationKey(caller.tenantId, applicationId, keyId);
      if (result === 'not_found') throw new NotFoundError('Application key', keyId);
      if (result === 'last_key') {
        throw new ConflictError(`Key '${keyId}' is the only key of application '${applicationId}'; create another key first, or delete the application`);
      }
      this.#callers.clear();
      this.#record(caller, 'application:key_delete', key);
    });
  }

  async #application(caller: Caller, id: string): Promise<void> {
    if (typeof id !== 'string' || (await this.#store.getApplication(caller.tenantId, id)) === null) throw new NotFoundError('Application', String(id));
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
