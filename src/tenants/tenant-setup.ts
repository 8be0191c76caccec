import { randomUUID } from 'node:crypto';
import { MIN_KEY_LENGTH } from '../auth/api-keys.js';
import type { ApplicationService, ApplicationView } from '../applications/application-service.js';
import type { AuditLog } from '../audit/audit.js';
import type { Clock } from '../common/clock.js';
import type { KeyRing } from '../crypto/key-ring.js';
import { NotFoundError, ValidationError, requireCreated } from '../errors/errors.js';
import { PERMISSIONS_BY_TYPE } from '../permissions/permissions.js';
import type { Store, TenantRecord } from '../storage/store.js';
import { refuseNul } from '../validation/no-nul.js';

export interface NewTenantInput {
  name: string;
  adminKey?: string;
  applicationName?: string;
}

export type NewTenant = { tenant: TenantRecord; application: ApplicationView & { key: string } };

/**
 * What an operator does outside any tenant's grants: creating tenants with their first
 * administrator, and recovering an administrator. No HTTP route reaches it.
 */
export class TenantSetup {
  #store: Store;
  #keyRing: KeyRing;
  #applications: ApplicationService;
  #audit: AuditLog;
  #clock: Clock;

  constructor(deps: { store: Store; keyRing: KeyRing; applications: ApplicationService; audit: AuditLog; clock: Clock }) {
    this.#store = deps.store;
    this.#keyRing = deps.keyRing;
    this.#applications = deps.applications;
    this.#audit = deps.audit;
    this.#clock = deps.clock;
  }

  async createTenant(input: NewTenantInput): Promise<NewTenant> {
    if (typeof input?.name !== 'string' || input.name.trim() === '' || input.name.length > 200) {
      throw ValidationError.field('name', 'must be 1 to 200 characters');
    }
    refuseNul(input, '');
    if (input.adminKey !== undefined && (typeof input.adminKey !== 'string' || input.adminKey.length < MIN_KEY_LENGTH)) {
      throw ValidationError.field('adminKey', `must be at least ${MIN_KEY_LENGTH} characters`);
    }
    const tenant: TenantRecord = { id: randomUUID(), name: input.name.trim(), createdAt: this.#clock.now() };
    const administrator = this.#applications.initialApplication(tenant.id, {
      name: input.applicationName ?? 'Administrator',
      type: 'management',
      permissions: [...PERMISSIONS_BY_TYPE.management],
      ...(input.adminKey === undefined ? {} : { key: input.adminKey }),
    });
    // One transaction: never a tenant without its administrator (or without keys).
    const initial = { application: administrator.record, key: administrator.keyRecord, keys: await this.#keyRing.newTenantKeys(tenant.id) };
    requireCreated(await this.#store.createTenant(tenant, initial), 'Tenant', tenant.id);
    return { tenant, application: administrator.view };
  }

  async createFirstTenant(input: NewTenantInput): Promise<NewTenant | null> {
    const firstOnly = async () => ((await this.#store.listTenants()).length > 0 ? null : this.createTenant(input));
    return this.#store.withLock ? this.#store.withLock('first-tenant', firstOnly) : firstOnly();
  }

  async recoverAdministrator(tenantId: string, input: { name?: string } = {}): Promise<ApplicationView & { key: string }> {
    if (typeof tenantId !== 'string' || (await this.#store.getTenant(tenantId)) === null) throw new NotFoundError('Tenant', String(tenantId));
    const {
      record,
      keyRecord,
      view: application,
    } = this.#applications.initialApplication(tenantId, {
      name: input.name ?? 'Recovered administrator',
      type: 'management',
      permissions: [...PERMISSIONS_BY_TYPE.management],
    });
    requireCreated(await this.#store.createApplication(record, keyRecord), 'Application', record.id);
    this.#audit.record({ tenantId, actor: 'operator', operation: 'application:recover', resourceId: application.id, outcome: 'success' });
    await this.#audit.flush();
    return application;
  }
}
