import type { Caller } from '../auth/caller.js';
import { NotFoundError } from '../errors/errors.js';
import type { Store } from '../storage/store.js';
import { formatIso } from '../common/time.js';

/** The caller's tenant as `GET /tenants/self` returns it. */
export interface TenantView {
  id: string;
  name: string;
  created_at: string;
}

/**
 * The caller's own tenant (`GET /tenants/self`). Any application of the tenant may read its id,
 * name and creation time: they are what the application already belongs to, never token data.
 * Tenants are created and listed by the operator (`vault.createTenant`, `operator.listTenants` of
 * tokenvault/operator).
 */
export class TenantService {
  readonly #store: Store;

  constructor(deps: { store: Store }) {
    this.#store = deps.store;
  }

  /** The tenant the caller belongs to. */
  async self(caller: Caller): Promise<TenantView> {
    const tenant = await this.#store.getTenant(caller.tenantId);
    // An authenticated caller's tenant exists; a store that lost it is not the caller's fault.
    if (!tenant) throw new NotFoundError('Tenant', caller.tenantId);
    return { id: tenant.id, name: tenant.name, created_at: formatIso(tenant.createdAt) };
  }
}
